//! State-machine tests of ExpressPass: each names the state and the event it drives.

use super::*;
use crate::transport::receiver::testkit::{call, flows, net, MSS, RTT_PS};
use crate::transport::FlowInfo;
use serde_json::json;

/// One (64 B credit + 1500 B MTU) at 10 Gbps: the credit gap at max_rate.
const GAP: Time = Time(1_251_200);

fn xp(cfg: serde_json::Value) -> ExpressPass {
    ExpressPass::from_config(&cfg, &net(), 1).unwrap()
}

fn credit(f: &FlowInfo, seq: u64, sent: Time) -> Packet {
    Packet {
        src: f.dst,
        dst: f.src,
        flow: f.id,
        size: 64,
        flags: PacketFlags(PacketFlags::CREDIT | PacketFlags::REVERSE_PATH),
        kind: KIND_CREDIT,
        aux: seq,
        ts: sent,
        ..Packet::default()
    }
}

fn request(f: &FlowInfo) -> Packet {
    Packet {
        src: f.src,
        dst: f.dst,
        flow: f.id,
        size: 64,
        kind: KIND_CREDIT_REQUEST,
        seq: f.size.0,
        ..Packet::default()
    }
}

/// The data packet a sender makes from credit `c` for packet `i` of a flow of `size`.
fn data_for(c: &Packet, i: u64, size: u64) -> Packet {
    let payload = (size - i * MSS).min(MSS);
    Packet {
        src: c.dst,
        dst: c.src,
        flow: c.flow,
        size: (payload + 40) as u32,
        payload: payload as u32,
        flags: PacketFlags(PacketFlags::DATA),
        kind: KIND_DATA,
        seq: i * MSS,
        ack: size,
        aux: c.aux,
        ts: c.ts,
        aux2: AUX2_SCHEDULED,
        ..Packet::default()
    }
}

#[test]
fn no_data_before_the_first_credit() {
    let fl = flows(&[(0, 1, 10 * MSS)]);
    let mut p = xp(json!({}));
    let out = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
    assert_eq!(out.sends.len(), 1, "only the credit request");
    let r = out.sends[0];
    assert_eq!((r.kind, r.seq, r.size, r.prio, r.is_data()), (KIND_CREDIT_REQUEST, 10 * MSS, 64, 0, false));
    assert_eq!(out.timers.len(), 1);
    let (at, tok) = out.timers[0];
    assert_eq!(at, Time(RTT_PS) * 10, "request timeout: 10 x the largest base RTT");
    // No credit for a whole timeout: the request is repeated, still without data.
    let out = call(0, at, &fl, |ctx| p.on_timer(ctx, tok));
    assert_eq!(out.sends.len(), 1);
    assert_eq!(out.sends[0].kind, KIND_CREDIT_REQUEST);
    assert_eq!(p.flow_stats(0).timeouts, 1);
    let (at2, tok2) = out.timers[0];
    // The first credit releases the first packet at once and disarms the request timer.
    let c = credit(&fl[0], 0, at + Time::us(1));
    let out = call(0, at + Time::us(5), &fl, |ctx| p.on_packet(ctx, &c));
    assert_eq!(out.sends.len(), 1);
    let d = out.sends[0];
    assert!(d.is_data() && !is_unscheduled_data(&d));
    assert_eq!((d.kind, d.seq, d.payload, d.size), (KIND_DATA, 0, MSS as u32, 1500));
    assert_eq!((d.aux, d.ts, d.aux2), (0, at + Time::us(1), AUX2_SCHEDULED), "echoes the credit");
    let out = call(0, at2, &fl, |ctx| p.on_timer(ctx, tok2));
    assert!(out.sends.is_empty(), "a stale request timer does nothing");
}

#[test]
fn each_credit_releases_exactly_one_packet_then_credits_are_wasted() {
    // 2 full packets and one of 100 B.
    let size = 2 * MSS + 100;
    let fl = flows(&[(0, 1, size)]);
    let mut p = xp(json!({}));
    let _ = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
    let mut data = vec![];
    let mut stops = vec![];
    for k in 0..6u64 {
        let now = Time::us(10 + k);
        let c = credit(&fl[0], k, now - Time::us(3));
        let out = call(0, now, &fl, |ctx| p.on_packet(ctx, &c));
        let d: Vec<Packet> = out.sends.iter().filter(|s| s.is_data()).copied().collect();
        assert!(d.len() <= 1, "never more than one packet per credit");
        data.extend(d);
        stops.extend(out.sends.iter().filter(|s| s.kind == KIND_CREDIT_STOP).map(|s| (k, s.seq)));
    }
    let got: Vec<(u64, u32, u64)> = data.iter().map(|d| (d.seq, d.payload, d.aux)).collect();
    assert_eq!(got, vec![(0, 1460, 0), (MSS, 1460, 1), (2 * MSS, 100, 2)]);
    assert_eq!(stops, vec![(2, size)], "CREDIT_STOP right after the last byte, once");
    assert_eq!((p.credits_received(0), p.wasted_credits(0)), (6, 3));
    // Still receiving credits stop_timeout (2 x RTT) after the stop: it is repeated.
    let late = Time::us(12) + Time(RTT_PS) * 2;
    let out = call(0, late, &fl, |ctx| p.on_packet(ctx, &credit(&fl[0], 6, late)));
    assert_eq!(out.sends.iter().map(|s| s.kind).collect::<Vec<_>>(), vec![KIND_CREDIT_STOP]);
    assert_eq!(p.wasted_credits(0), 4);
}

#[test]
fn feedback_control_follows_algorithm_1() {
    let params = ExpressPassConfig::default().resolve(&net()).unwrap();
    let mut fb = CreditFeedback::new(&params);
    assert_eq!((fb.rate, fb.w, fb.prev_increase), (1.0 / 16.0, 1.0 / 16.0, false));
    fb.rate = 0.5;
    let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
    // Loss 20% > 10%: decrease, rate x (1 - 0.2)(1 + 0.1), w halved.
    fb.update(0.2, 0.0);
    assert!(close(fb.rate, 0.44) && close(fb.w, 1.0 / 32.0) && !fb.prev_increase, "{fb:?}");
    // Loss 5% <= 10%: increase; the previous update decreased, so w stays.
    fb.update(0.05, 0.0);
    assert!(close(fb.rate, (1.0 - 1.0 / 32.0) * 0.44 + 1.0 / 32.0 * 1.1), "{fb:?}");
    assert!(close(fb.rate, 0.460625) && close(fb.w, 1.0 / 32.0));
    // Loss exactly at the target still increases; now w = (w + w_max) / 2.
    fb.update(0.1, 0.0);
    assert!(close(fb.w, (1.0 / 32.0 + 0.5) / 2.0) && close(fb.w, 0.265625));
    assert!(close(fb.rate, (1.0 - 0.265625) * 0.460625 + 0.265625 * 1.1), "{fb:?}");
    assert!(close(fb.rate, 0.630458984375));
    // Repeated increases approach max_rate (1 + target) but are capped at max_rate.
    let mut rates = vec![];
    for _ in 0..6 {
        fb.update(0.0, 0.0);
        rates.push(fb.rate);
    }
    assert!(rates.windows(2).all(|w| w[1] >= w[0]), "{rates:?}");
    assert!(close(rates[0], (1.0 - 0.3828125) * 0.630458984375 + 0.3828125 * 1.1), "{rates:?}");
    assert_eq!(*rates.last().unwrap(), 1.0, "capped at max_rate: {rates:?}");
    assert!(close(fb.w, 0.5 - (0.5 - 0.265625) / 64.0), "w -> w_max by halving the gap: {}", fb.w);
    // Decreases halve w down to w_min = 0.01.
    for _ in 0..8 {
        fb.update(0.5, 0.0);
    }
    assert!(close(fb.w, 0.01));
    assert!(close(fb.rate, 0.55f64.powi(8)), "each 50% loss multiplies the rate by 0.55");
    // Total loss: the rate falls to the floor (one credit per update period).
    fb.update(1.0, 0.02);
    assert_eq!(fb.rate, 0.02);
}

/// Drive one receiver: the request arrives at t = 0; each credit is answered by its data
/// packet `delay` later unless `lost(seq)`. Returns (time, credit) for every credit sent.
fn drive(
    p: &mut ExpressPass,
    fl: &[FlowInfo],
    until: Time,
    delay: Time,
    lost: impl Fn(u64) -> bool,
) -> Vec<(Time, Packet)> {
    let host = fl[0].dst;
    let mut q: Vec<(Time, u64, Result<u64, Packet>)> = vec![(Time::ZERO, 0, Err(request(&fl[0])))];
    let mut n = 1;
    let mut credits = vec![];
    let mut next_pkt = 0;
    loop {
        q.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
        let Some((now, _, ev)) = q.pop() else { break };
        if now > until {
            break;
        }
        let out = call(host, now, fl, |ctx| match ev {
            Ok(tk) => p.on_timer(ctx, tk),
            Err(pk) => p.on_packet(ctx, &pk),
        });
        for &(at, tk) in &out.timers {
            q.push((at, n, Ok(tk)));
            n += 1;
        }
        for s in out.sends.iter().filter(|s| s.kind == KIND_CREDIT) {
            credits.push((now, *s));
            if !lost(s.aux) {
                q.push((now + delay, n, Err(data_for(s, next_pkt, fl[0].size.0))));
                n += 1;
                next_pkt += 1;
            }
        }
    }
    credits
}

#[test]
fn receiver_paces_credits_and_reacts_to_credit_loss() {
    // A long flow; jitter and size spread off; update period fixed at 20 us; the data of
    // each credit arrives 5 us after the credit is sent; every odd-numbered credit is lost.
    let fl = flows(&[(0, 1, 100_000_000)]);
    let cfg = json!({"jitter": 0, "credit_size_spread": "0B", "update_period": "20us"});
    let mut p = xp(cfg.clone());
    let credits = drive(&mut p, &fl, Time::us(80), Time::us(5), |s| s % 2 == 1);
    let gap = |rate: f64| Time((GAP.0 as f64 / rate).round() as u64);
    let t: Vec<Time> = credits.iter().map(|c| c.0).collect();
    assert!(credits.iter().all(|c| c.1.size == 64 && c.1.flags.has(PacketFlags::CREDIT | PacketFlags::REVERSE_PATH)));
    let seqs: Vec<u64> = credits.iter().map(|c| c.1.aux).collect();
    assert_eq!(seqs, (0..credits.len() as u64).collect::<Vec<_>>(), "numbered in order");
    // Credit 0 leaves on the request; alpha = 1/16: the next one 16 x 1.2512 us later.
    assert_eq!((t[0], t[1]), (Time::ZERO, GAP * 16));
    // At credit 1 (20.02 us, one period after the request) credit 0 was answered: no loss,
    // first increase (w stays 1/16): rate = 15/16 x 1/16 + 1/16 x 1.1 = 0.12734375.
    let r1 = 15.0 / 256.0 + 1.1 / 16.0;
    assert_eq!(r1, 0.12734375);
    assert_eq!(t[2] - t[1], gap(r1));
    assert_eq!(t[3] - t[2], gap(r1), "no update before a period has passed");
    // At credit 4 (49.5 us): credit 1 lost, credit 2 answered (echo 2 after 0: one drop),
    // credit 3 lost but not yet known. Loss 1/2 > 10%: rate x (1 - 0.5)(1 + 0.1), w / 2.
    assert!(t[4] >= t[1] + Time::us(20) && t[3] < t[1] + Time::us(20));
    let r2 = r1 * 0.5 * 1.1;
    assert_eq!(t[5] - t[4], gap(r2));
    let fb = p.feedback(0).unwrap();
    assert_eq!((fb.rate, fb.w, fb.prev_increase), (r2, 1.0 / 32.0, false));

    // Without loss the rate climbs to max_rate: the gaps shrink to one (credit + MTU) time.
    let mut p = xp(cfg);
    let credits = drive(&mut p, &fl, Time::us(400), Time::us(5), |_| false);
    let gaps: Vec<Time> = credits.windows(2).map(|w| w[1].0 - w[0].0).collect();
    assert_eq!(gaps[0], GAP * 16);
    assert!(gaps.windows(2).all(|w| w[1] <= w[0]), "monotone ramp without loss");
    assert_eq!(*gaps.last().unwrap(), GAP, "max_rate: one credit per (credit + MTU) time at 10 Gbps");
    assert_eq!(p.feedback(0).unwrap().rate, 1.0);
}

#[test]
fn a_stop_with_missing_data_is_answered_by_nacks_and_retransmissions() {
    let size = 4 * MSS;
    let fl = flows(&[(0, 1, size)]);
    let mut p = xp(json!({}));
    // Receiver: request, then data for packets 0, 2, 3 (1 lost), then the stop.
    let out = call(1, Time::ZERO, &fl, |ctx| p.on_packet(ctx, &request(&fl[0])));
    assert_eq!(out.sends.len(), 1);
    let c = out.sends[0];
    for (k, i) in [(0u64, 0u64), (2, 2), (3, 3)] {
        let mut cc = c;
        cc.aux = k;
        let out = call(1, Time::us(10 + k), &fl, |ctx| p.on_packet(ctx, &data_for(&cc, i, size)));
        assert!(out.completions.is_empty());
    }
    let stop = Packet { kind: KIND_CREDIT_STOP, src: 0, dst: 1, flow: 0, size: 64, seq: size, ..Packet::default() };
    let out = call(1, Time::us(20), &fl, |ctx| p.on_packet(ctx, &stop));
    let nacks: Vec<(u64, u64)> = out.sends.iter().filter(|s| s.kind == KIND_NACK).map(|s| (s.seq, s.ack)).collect();
    assert_eq!(nacks, vec![(MSS, 2 * MSS)]);
    assert!(p.feedback(0).is_some(), "the receiver keeps crediting");
    // Sender: sends all four, stop; the NACK queues packet 1 ahead of nothing; the next
    // credit retransmits it and stops again.
    let _ = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
    for k in 0..4 {
        let _ = call(0, Time::us(5 + k), &fl, |ctx| p.on_packet(ctx, &credit(&fl[0], k, Time::ZERO)));
    }
    let nack =
        Packet { kind: KIND_NACK, src: 1, dst: 0, flow: 0, size: 64, seq: MSS, ack: 2 * MSS, ..Packet::default() };
    let _ = call(0, Time::us(21), &fl, |ctx| p.on_packet(ctx, &nack));
    let out = call(0, Time::us(22), &fl, |ctx| p.on_packet(ctx, &credit(&fl[0], 4, Time::us(21))));
    let kinds: Vec<(u8, u64)> = out.sends.iter().map(|s| (s.kind, s.seq)).collect();
    assert_eq!(kinds, vec![(KIND_DATA, MSS), (KIND_CREDIT_STOP, size)]);
    assert_eq!(p.flow_stats(0).retx_bytes, MSS);
    // The receiver completes on the retransmission and stops crediting on the next stop.
    let mut cc = c;
    cc.aux = 4;
    let out = call(1, Time::us(25), &fl, |ctx| p.on_packet(ctx, &data_for(&cc, 1, size)));
    assert_eq!(out.completions, vec![0]);
    let _ = call(1, Time::us(26), &fl, |ctx| p.on_packet(ctx, &stop));
    assert!(p.feedback(0).is_none(), "credits stopped");
    assert!(p.credits_sent(0) >= 1);
}

#[test]
fn the_retransmission_queue_goes_before_new_data() {
    let fl = flows(&[(0, 1, 6 * MSS)]);
    let mut p = xp(json!({}));
    assert_eq!(p.pre_credit().packets, 0, "ExpressPass itself sends nothing before credits");
    assert!(!p.wants_nic_idle());
    let _ = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
    let out = call(0, Time::us(1), &fl, |ctx| p.on_nic_idle(ctx));
    assert!(out.sends.is_empty(), "no first-RTT data without Aeolus");
    for k in 0..2 {
        let _ = call(0, Time::us(7 + k), &fl, |ctx| p.on_packet(ctx, &credit(&fl[0], k, Time::us(1))));
    }
    assert!(p.queue_retransmission(0, 1));
    assert!(!p.queue_retransmission(0, 1), "already queued");
    assert!(!p.queue_retransmission(0, 4), "never sent");
    let out = call(0, Time::us(9), &fl, |ctx| p.on_packet(ctx, &credit(&fl[0], 2, Time::us(2))));
    assert_eq!((out.sends[0].seq, out.sends[0].aux2), (MSS, AUX2_SCHEDULED), "the retransmission first");
    let out = call(0, Time::us(10), &fl, |ctx| p.on_packet(ctx, &credit(&fl[0], 3, Time::us(3))));
    assert_eq!(out.sends[0].seq, 2 * MSS, "then new data");
    assert_eq!(p.flow_stats(0).retx_bytes, MSS);
}

// ------------------------------------------------------------------ ExpressPass + Aeolus

/// One BDP of the test network: 10 Gbps x 6.5024 us = 8128 B = 6 packets of 1460 B.
const U: u64 = 6;

fn xpa(cfg: serde_json::Value) -> ExpressPass {
    let mut c = cfg;
    c["aeolus"] = json!(true);
    xp(c)
}

/// Drive the sender's NIC: `on_nic_idle` until it has nothing left to send.
fn drain(p: &mut ExpressPass, fl: &[FlowInfo], now: Time) -> Vec<Packet> {
    let mut all = vec![];
    loop {
        let out = call(0, now, fl, |ctx| p.on_nic_idle(ctx));
        if out.sends.is_empty() {
            return all;
        }
        all.extend(out.sends);
    }
}

fn uack(f: &FlowInfo, idx: u64, kind: u8) -> Packet {
    Packet { src: f.dst, dst: f.src, flow: f.id, size: 64, kind, seq: idx * MSS, aux: idx, ..Packet::default() }
}

#[test]
fn aeolus_sends_one_bdp_unscheduled_at_line_rate_then_the_probe() {
    let fl = flows(&[(0, 1, 10 * MSS)]);
    let mut p = xpa(json!({}));
    assert_eq!(p.params().unsched_pkts, U);
    assert!(p.wants_nic_idle());
    // Start: the request, then the first unscheduled packet (the NIC was idle).
    let out = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
    let k: Vec<(u8, u64)> = out.sends.iter().map(|s| (s.kind, s.seq)).collect();
    assert_eq!(k, vec![(KIND_CREDIT_REQUEST, 10 * MSS), (KIND_DATA, 0)]);
    // A busy NIC gets nothing more until it reports idle: one packet per idle report.
    let out = call(0, Time::ZERO, &fl, |ctx| p.on_packet(ctx, &uack(&fl[0], 0, 99)));
    assert!(out.sends.is_empty());
    let mut sent = vec![out_first(&k)];
    for _ in 1..U {
        let out = call(0, Time::ZERO, &fl, |ctx| p.on_nic_idle(ctx));
        assert!(!out.sends.is_empty());
        sent.extend(out.sends.iter().map(|s| (s.kind, s.seq)));
    }
    let want: Vec<(u8, u64)> = (0..U).map(|i| (KIND_DATA, i * MSS)).chain([(KIND_PROBE, (U - 1) * MSS)]).collect();
    assert_eq!(sent, want, "U unscheduled packets, the probe right behind the last");
    assert!(drain(&mut p, &fl, Time::ZERO).is_empty(), "nothing more before a credit");
    let a = p.aeolus_sender(0).unwrap();
    assert_eq!((a.sent(), a.probe_sent()), (U as u32, true));
}

fn out_first(k: &[(u8, u64)]) -> (u8, u64) {
    k[1]
}

#[test]
fn aeolus_packets_are_flagged_for_selective_dropping_and_the_probe_is_not() {
    let fl = flows(&[(0, 1, 2 * MSS + 10)]);
    let mut p = xpa(json!({}));
    let mut s = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0)).sends;
    s.extend(drain(&mut p, &fl, Time::ZERO));
    let data: Vec<&Packet> = s.iter().filter(|x| x.is_data()).collect();
    assert_eq!(data.len(), 3, "a flow below one BDP goes entirely unscheduled");
    assert!(data.iter().all(|d| d.flags.has(PacketFlags::UNSCHEDULED) && is_unscheduled_data(d) && d.prio == 0));
    let probe = s.iter().find(|x| x.kind == KIND_PROBE).unwrap();
    assert!(!probe.flags.has(PacketFlags::UNSCHEDULED) && !probe.is_data());
    assert_eq!((probe.aux, probe.ack, probe.size, probe.prio), (2, 2 * MSS + 10, 64, 0));
    // low_priority: no UNSCHEDULED flag, the lowest class for the packets and the probe.
    let mut q = xpa(json!({"aeolus_mode": "low_priority"}));
    let mut s = call(0, Time::ZERO, &fl, |ctx| q.start_flow(ctx, 0)).sends;
    s.extend(drain(&mut q, &fl, Time::ZERO));
    assert!(s.iter().filter(|x| x.kind != KIND_CREDIT_REQUEST).all(|x| x.prio == 7));
    assert!(s.iter().all(|x| !x.flags.has(PacketFlags::UNSCHEDULED)));
    assert_eq!(s.iter().find(|x| x.kind == KIND_CREDIT_REQUEST).unwrap().prio, 0);
}

#[test]
fn a_lost_unscheduled_packet_is_resent_once_as_scheduled_on_the_next_credit_before_new_data() {
    let fl = flows(&[(0, 1, 10 * MSS)]);
    let mut p = xpa(json!({}));
    let _ = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
    let _ = drain(&mut p, &fl, Time::ZERO);
    // Packet 1 was selectively dropped: the ACK of packet 2 reveals it.
    for i in [0, 2, 3] {
        let _ = call(0, Time::us(7), &fl, |ctx| p.on_packet(ctx, &uack(&fl[0], i, KIND_UACK)));
    }
    assert_eq!(p.aeolus_sender(0).unwrap().detected_lost(), 1);
    // First credit: packet 1 as a scheduled packet (echoing the credit), not new data.
    let out = call(0, Time::us(8), &fl, |ctx| p.on_packet(ctx, &credit(&fl[0], 0, Time::us(2))));
    let d: Vec<&Packet> = out.sends.iter().filter(|s| s.is_data()).collect();
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].seq, d[0].aux2, d[0].aux, d[0].rank), (MSS, AUX2_SCHEDULED, 0, U as u32));
    assert!(!d[0].flags.has(PacketFlags::UNSCHEDULED) && !is_unscheduled_data(d[0]));
    assert_eq!(p.flow_stats(0).retx_bytes, MSS);
    // The probe ACK finds 4 and 5 lost too (tail losses): they go on the next credits, then
    // new data 6..9; packet 1 is never sent again.
    let _ = call(0, Time::us(8), &fl, |ctx| p.on_packet(ctx, &uack(&fl[0], U - 1, KIND_PROBE_ACK)));
    let mut seqs = vec![];
    for k in 1..12 {
        let out = call(0, Time::us(8 + k), &fl, |ctx| p.on_packet(ctx, &credit(&fl[0], k, Time::us(3))));
        seqs.extend(out.sends.iter().filter(|s| s.is_data()).map(|s| s.seq / MSS));
    }
    assert_eq!(seqs, vec![4, 5, 6, 7, 8, 9], "lost first, then new, nothing twice");
    assert_eq!(p.aeolus_sender(0).unwrap().resent(), 3);
    assert_eq!(p.flow_stats(0).retx_bytes, 3 * MSS);
}

#[test]
fn an_unacknowledged_unscheduled_packet_goes_after_new_data_once() {
    // All of a 3-packet flow went unscheduled; the credit finds no loss and no new data:
    // the first unacknowledged packet is resent (class 3), once.
    let fl = flows(&[(0, 1, 3 * MSS)]);
    let mut p = xpa(json!({}));
    let _ = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
    let _ = drain(&mut p, &fl, Time::ZERO);
    let _ = call(0, Time::us(7), &fl, |ctx| p.on_packet(ctx, &uack(&fl[0], 0, KIND_UACK)));
    let mut got = vec![];
    for k in 0..4 {
        let out = call(0, Time::us(8 + k), &fl, |ctx| p.on_packet(ctx, &credit(&fl[0], k, Time::us(2))));
        got.push(out.sends.iter().map(|s| (s.kind, s.seq / MSS)).collect::<Vec<_>>());
    }
    assert_eq!(got[0], vec![(KIND_DATA, 1), (KIND_CREDIT_STOP, 3)], "all sent: CREDIT_STOP follows");
    assert_eq!(got[1], vec![(KIND_DATA, 2)]);
    assert!(got[2].is_empty() && got[3].is_empty(), "nothing left: credits wasted");
    assert_eq!((p.wasted_credits(0), p.aeolus_sender(0).unwrap().resent()), (2, 2));
}

#[test]
fn the_first_credit_ends_the_burst_and_releases_the_probe() {
    let fl = flows(&[(0, 1, 10 * MSS)]);
    let mut p = xpa(json!({}));
    let _ = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
    let _ = call(0, Time::ZERO, &fl, |ctx| p.on_nic_idle(ctx));
    let _ = call(0, Time::ZERO, &fl, |ctx| p.on_nic_idle(ctx));
    // Packets 0..2 went unscheduled; a credit arrives.
    let out = call(0, Time::us(6), &fl, |ctx| p.on_packet(ctx, &credit(&fl[0], 0, Time::us(1))));
    let k: Vec<(u8, u64, u32)> = out.sends.iter().map(|s| (s.kind, s.seq / MSS, s.rank)).collect();
    assert_eq!(k, vec![(KIND_PROBE, 2, 0), (KIND_DATA, 3, 3)], "probe after packet 2, then scheduled data");
    assert!(drain(&mut p, &fl, Time::us(6)).is_empty(), "no more unscheduled packets");
}

/// `credit_from_request = false` (the accounting receiver): the receiver of a 4-packet
/// flow (below one BDP) sends no credit while every packet is expected unscheduled; a
/// declared loss starts credits; completion stops them.
#[test]
fn the_receiver_credits_only_what_will_not_come_unscheduled() {
    let size = 4 * MSS;
    let fl = flows(&[(0, 1, size)]);
    let mut p = xpa(json!({"credit_from_request": false}));
    let unsched =
        |i: u64| Packet { aux2: 0, aux: 0, ts: Time::ZERO, ..data_for(&credit(&fl[0], 0, Time::ZERO), i, size) };
    let out = call(1, Time::ZERO, &fl, |ctx| p.on_packet(ctx, &request(&fl[0])));
    assert!(out.sends.is_empty() && !p.is_crediting(0), "every byte will come unscheduled");
    assert_eq!(out.timers.len(), 1, "the last-resort timer");
    let out = call(1, Time::us(1), &fl, |ctx| p.on_packet(ctx, &unsched(0)));
    assert_eq!(out.sends.iter().map(|s| (s.kind, s.aux)).collect::<Vec<_>>(), vec![(KIND_UACK, 0)]);
    // Packet 1 lost: packet 2 reveals it; the receiver ACKs 2 and starts crediting.
    let out = call(1, Time::us(2), &fl, |ctx| p.on_packet(ctx, &unsched(2)));
    let k: Vec<u8> = out.sends.iter().map(|s| s.kind).collect();
    assert_eq!(k, vec![KIND_UACK, KIND_CREDIT]);
    assert!(p.is_crediting(0));
    let _ = call(1, Time::us(3), &fl, |ctx| p.on_packet(ctx, &unsched(3)));
    // One credit covers the loss: once it is out, the next pacer tick finds nothing owed
    // except packet 1, so credits continue until it arrives.
    let mut retx = data_for(&credit(&fl[0], 0, Time::us(2)), 1, size);
    retx.rank = 4;
    let out = call(1, Time::us(9), &fl, |ctx| p.on_packet(ctx, &retx));
    assert_eq!(out.completions, vec![0]);
    assert!(!p.is_crediting(0) && p.feedback(0).is_none(), "credits stop at completion (Aeolus §IV-B)");
    assert_eq!(p.credits_sent(0), 1);

    // A flow above one BDP: packets 6.. need credits from the request on.
    let fl = flows(&[(0, 1, 10 * MSS)]);
    let mut p = xpa(json!({"credit_from_request": false}));
    let out = call(1, Time::ZERO, &fl, |ctx| p.on_packet(ctx, &request(&fl[0])));
    assert_eq!(out.sends[0].kind, KIND_CREDIT);
    // The probe says only packets 0..=2 went unscheduled (the first credit ended the
    // burst): 3..5 now need credits too; none of 0..2 arrived: declared lost.
    let probe = Packet {
        src: 0,
        dst: 1,
        flow: 0,
        size: 64,
        kind: KIND_PROBE,
        aux: 2,
        seq: 2 * MSS,
        ack: 10 * MSS,
        ..Packet::default()
    };
    let out = call(1, Time::us(3), &fl, |ctx| p.on_packet(ctx, &probe));
    assert_eq!(out.sends.iter().map(|s| (s.kind, s.aux)).collect::<Vec<_>>(), vec![(KIND_PROBE_ACK, 2)]);
    let Some(Rcv::Active(r)) = p.rcv.first() else { panic!() };
    assert_eq!((r.unsched, r.expected, r.aeolus.as_ref().unwrap().declared_lost()), (3, 0, 3));
}

/// `credit_from_request` (the Aeolus paper's ExpressPass receiver, the default): a
/// 4-packet flow (below one BDP) is credited from its request on, while every packet is
/// still expected unscheduled, until it holds every byte; with `credit_from_request =
/// false` the receiver sends nothing.
#[test]
fn with_credit_from_request_a_flow_of_at_most_one_bdp_is_credited_from_its_request() {
    let size = 4 * MSS;
    let fl = flows(&[(0, 1, size)]);
    let unsched =
        |i: u64| Packet { aux2: 0, aux: 0, ts: Time::ZERO, ..data_for(&credit(&fl[0], 0, Time::ZERO), i, size) };
    let mut p = xpa(json!({}));
    assert!(p.params().credit_from_request, "the default");
    let out = call(1, Time::ZERO, &fl, |ctx| p.on_packet(ctx, &request(&fl[0])));
    assert_eq!(out.sends.iter().map(|s| (s.kind, s.aux)).collect::<Vec<_>>(), vec![(KIND_CREDIT, 0)]);
    assert!(p.is_crediting(0));
    let (at, tok) = *out.timers.iter().find(|t| untoken(t.1).1 == TIMER_CREDIT).unwrap();
    // Credits at alpha = 1/16 of max_rate: 16 gaps, +-10% jitter.
    assert!(at >= Time(GAP.0 * 16 * 9 / 10) && at <= Time(GAP.0 * 16 * 11 / 10), "{at:?}");
    let out = call(1, Time::us(1), &fl, |ctx| p.on_packet(ctx, &unsched(0)));
    assert_eq!(out.sends.iter().map(|s| s.kind).collect::<Vec<_>>(), vec![KIND_UACK], "no extra credit");
    // The pacer keeps crediting although packets 1..3 are still expected unscheduled.
    let out = call(1, at, &fl, |ctx| p.on_timer(ctx, tok));
    assert_eq!(out.sends.iter().map(|s| (s.kind, s.aux)).collect::<Vec<_>>(), vec![(KIND_CREDIT, 1)]);
    let (at2, tok2) = *out.timers.iter().find(|t| untoken(t.1).1 == TIMER_CREDIT).unwrap();
    for i in 1..4 {
        let out = call(1, Time::us(2 + i), &fl, |ctx| p.on_packet(ctx, &unsched(i)));
        assert_eq!(out.completions, if i == 3 { vec![0] } else { vec![] });
    }
    assert!(!p.is_crediting(0), "credits stop once every byte is held (Aeolus §IV-B)");
    let out = call(1, at2, &fl, |ctx| p.on_timer(ctx, tok2));
    assert!(out.sends.is_empty(), "the pacer's next tick sends nothing");
    assert_eq!(p.credits_sent(0), 2);

    // The accounting receiver: no credit for bytes expected unscheduled.
    let mut q = xpa(json!({"credit_from_request": false}));
    assert!(!q.params().credit_from_request);
    let out = call(1, Time::ZERO, &fl, |ctx| q.on_packet(ctx, &request(&fl[0])));
    assert!(out.sends.is_empty() && !q.is_crediting(0));
    let out = call(1, Time::us(1), &fl, |ctx| q.on_packet(ctx, &unsched(0)));
    assert_eq!(out.sends.iter().map(|s| s.kind).collect::<Vec<_>>(), vec![KIND_UACK]);
    assert_eq!(q.credits_sent(0), 0);
}

/// Both ends, no probe, 3-packet flow whose tail (packet 2) is dropped. With
/// `credit_from_request` the credit sent at the request reaches the sender after the
/// ACKs of 0 and 1: it resends the unacknowledged packet 2 (no new data is left) with
/// CREDIT_STOP behind it, and the flow completes about one RTT after its last
/// unscheduled packet. Without it the receiver credits nothing and the flow waits for
/// `rto` (10 ms).
#[test]
fn with_credit_from_request_a_lost_tail_without_the_probe_is_resent_on_the_first_credit() {
    let size = 3 * MSS;
    let fl = flows(&[(0, 1, size)]);
    for on in [true, false] {
        let mut p = xpa(json!({"aeolus_probe": false, "credit_from_request": on}));
        // t = 0: the sender sends the request and packets 0..2 (no probe).
        let mut sent = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0)).sends;
        sent.extend(drain(&mut p, &fl, Time::ZERO));
        let k: Vec<(u8, u64)> = sent.iter().map(|s| (s.kind, s.seq / MSS)).collect();
        assert_eq!(k, vec![(KIND_CREDIT_REQUEST, 3), (KIND_DATA, 0), (KIND_DATA, 1), (KIND_DATA, 2)]);
        // t = 3 us: the request reaches the receiver, then packets 0 and 1; 2 was dropped.
        let out = call(1, Time::us(3), &fl, |ctx| p.on_packet(ctx, &sent[0]));
        let credits: Vec<Packet> = out.sends.iter().filter(|s| s.kind == KIND_CREDIT).copied().collect();
        let rto = *out.timers.iter().find(|t| untoken(t.1).1 == TIMER_RTO).unwrap();
        let mut acks = vec![];
        for (t, d) in [(4, &sent[1]), (5, &sent[2])] {
            let out = call(1, Time::us(t), &fl, |ctx| p.on_packet(ctx, d));
            assert!(out.sends.iter().all(|s| s.kind == KIND_UACK));
            acks.extend(out.sends);
        }
        if !on {
            assert!(credits.is_empty() && !p.is_crediting(0), "every missing packet is expected unscheduled");
            assert_eq!(rto.0, Time::ms(10) + Time::us(3), "only the last resort is left");
            continue;
        }
        assert_eq!(credits.len(), 1);
        // t = 7, 8 us: the ACKs of 0 and 1 reach the sender; t = 9 us: the credit.
        for (t, a) in [(7, &acks[0]), (8, &acks[1])] {
            let _ = call(0, Time::us(t), &fl, |ctx| p.on_packet(ctx, a));
        }
        let out = call(0, Time::us(9), &fl, |ctx| p.on_packet(ctx, &credits[0]));
        let k: Vec<(u8, u64)> = out.sends.iter().map(|s| (s.kind, s.seq / MSS)).collect();
        assert_eq!(k, vec![(KIND_DATA, 2), (KIND_CREDIT_STOP, 3)], "the unacknowledged tail, nothing new");
        assert_eq!(out.sends[0].aux2, AUX2_SCHEDULED);
        assert_eq!((p.aeolus_sender(0).unwrap().resent(), p.flow_stats(0).retx_bytes), (1, MSS));
        // t = 12 us: the resent packet completes the flow; no timeout anywhere.
        let out = call(1, Time::us(12), &fl, |ctx| p.on_packet(ctx, &out.sends[0]));
        assert_eq!(out.completions, vec![0]);
        assert_eq!(p.flow_stats(0).timeouts, 0);
        // A further credit finds nothing: wasted, CREDIT_STOP already sent.
        let out = call(0, Time::us(13), &fl, |ctx| p.on_packet(ctx, &credit(&fl[0], 1, Time::us(10))));
        assert!(out.sends.is_empty());
        assert_eq!(p.wasted_credits(0), 1);
    }
}

/// The default (the Aeolus paper's receiver), both ends, a 100 B flow alone on a 10 Gbps
/// one-switch path with 1 us links; the timestamps are those of the full simulation
/// (`tests/expresspass_aeolus.rs`). The request reaches the receiver 172.8 ns before the
/// data packet (the request leaves first and is shorter), so the first credit leaves
/// before the packet arrives and reaches the sender 168 ns before the packet's ACK. That
/// is no same-instant ordering: the credit was sent first. The sender then has no
/// loss-detected packet and no new data, and packet 0 is "sent but unacknowledged": by the
/// Aeolus §III-C order it resends it on the credit (a redundant copy on the slot the credit
/// reserved; §V-E: "no wastage of credit") with CREDIT_STOP behind it. The flow completes
/// at the first copy; the receiver, holding every byte, sends no second credit. Had the
/// ACK come first, the credit would have been wasted. Fails on the code before
/// `credit_from_request` became the default (no credit at the request there).
#[test]
fn by_default_a_credit_sent_before_the_data_arrived_resends_the_unacknowledged_packet() {
    let size = 100;
    let fl = flows(&[(0, 1, size)]);
    for ack_first in [false, true] {
        let mut p = xpa(json!({}));
        // t = 0: request, packet 0, probe.
        let mut sent = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0)).sends;
        sent.extend(drain(&mut p, &fl, Time::ZERO));
        let k: Vec<(u8, u64)> = sent.iter().map(|s| (s.kind, s.seq)).collect();
        assert_eq!(k, vec![(KIND_CREDIT_REQUEST, 100), (KIND_DATA, 0), (KIND_PROBE, 0)]);
        // t = 2.1024 us: the request at the receiver: the first credit leaves at once.
        let out = call(1, Time(2_102_400), &fl, |ctx| p.on_packet(ctx, &sent[0]));
        let credit0: Vec<Packet> = out.sends.iter().filter(|s| s.kind == KIND_CREDIT).copied().collect();
        assert_eq!(credit0.len(), 1, "credited from the request on");
        let (pacer_at, pacer) = *out.timers.iter().find(|t| untoken(t.1).1 == TIMER_CREDIT).unwrap();
        // t = 2.2752 us: packet 0 completes the flow and is ACKed; t = 2.3264 us: the probe.
        let out = call(1, Time(2_275_200), &fl, |ctx| p.on_packet(ctx, &sent[1]));
        assert_eq!(out.completions, vec![0]);
        let uack0: Vec<Packet> = out.sends.iter().filter(|s| s.kind == KIND_UACK).copied().collect();
        assert_eq!(uack0.len(), 1);
        let out = call(1, Time(2_326_400), &fl, |ctx| p.on_packet(ctx, &sent[2]));
        let pack = out.sends[0];
        assert_eq!(pack.kind, KIND_PROBE_ACK);
        // The pacer's next tick finds the flow complete: no second credit.
        let out = call(1, pacer_at, &fl, |ctx| p.on_timer(ctx, pacer));
        assert!(out.sends.is_empty());
        assert_eq!(p.credits_sent(0), 1);
        // At the sender: the credit at 4.2096 us, the ACK at 4.3776 us, the probe ACK at
        // 4.4288 us (swapped when `ack_first`).
        let (t_credit, t_ack) = if ack_first { (4_377_600, 4_209_600) } else { (4_209_600, 4_377_600) };
        let mut events = [(t_ack, uack0[0]), (t_credit, credit0[0]), (4_428_800, pack)];
        events.sort_by_key(|e| e.0);
        let mut sends = vec![];
        for (t, pk) in events {
            let out = call(0, Time(t), &fl, |ctx| p.on_packet(ctx, &pk));
            sends.extend(out.sends.iter().map(|s| (t, s.kind, s.seq, s.aux2)));
        }
        if ack_first {
            assert_eq!(sends, vec![(4_377_600, KIND_CREDIT_STOP, 100, 0)], "acknowledged: the credit is wasted");
            assert_eq!((p.wasted_credits(0), p.flow_stats(0).retx_bytes), (1, 0));
            continue;
        }
        assert_eq!(
            sends,
            vec![(4_209_600, KIND_DATA, 0, AUX2_SCHEDULED), (4_209_600, KIND_CREDIT_STOP, 100, 0)],
            "no loss, no new data: the unacknowledged packet 0, then CREDIT_STOP; the late ACKs send nothing"
        );
        let a = p.aeolus_sender(0).unwrap();
        assert_eq!((a.resent(), p.flow_stats(0).retx_bytes, p.wasted_credits(0)), (1, 100, 0));
        // The copy reaches the receiver after completion: nothing happens.
        let mut dup = sent[1];
        dup.aux2 = AUX2_SCHEDULED;
        let out = call(1, Time(6_433_600), &fl, |ctx| p.on_packet(ctx, &dup));
        assert!(out.sends.is_empty() && out.completions.is_empty());
    }
}

#[test]
fn the_last_resort_timeout_credits_packets_that_never_came() {
    // The tail packet and the probe of a 2-packet flow were lost: after rto without
    // progress the receiver gives up waiting and credits (one timeout counted).
    let size = 2 * MSS;
    let fl = flows(&[(0, 1, size)]);
    let mut p = xpa(json!({"rto": "100us", "credit_from_request": false}));
    let out = call(1, Time::ZERO, &fl, |ctx| p.on_packet(ctx, &request(&fl[0])));
    let (at, tok) = out.timers[0];
    assert_eq!(at, Time::us(100));
    let un = Packet { aux2: 0, aux: 0, ..data_for(&credit(&fl[0], 0, Time::ZERO), 0, size) };
    let _ = call(1, Time::us(1), &fl, |ctx| p.on_packet(ctx, &un));
    let out = call(1, at, &fl, |ctx| p.on_timer(ctx, tok));
    assert!(out.sends.is_empty(), "progress at 1 us: not yet");
    let (at2, tok2) = out.timers[0];
    assert_eq!(at2, Time::us(101));
    let out = call(1, at2, &fl, |ctx| p.on_timer(ctx, tok2));
    assert_eq!(out.sends.iter().map(|s| s.kind).collect::<Vec<_>>(), vec![KIND_CREDIT]);
    assert_eq!(p.flow_stats(0).timeouts, 1);
}

#[test]
fn without_nack_a_lost_scheduled_packet_waits_for_the_timeout() {
    // Plain ExpressPass, nack = false, rto = 50 us: packet 1 of 4 is lost; CREDIT_STOP
    // is answered by nothing; 50 us after the last new data the receiver NACKs it.
    let size = 4 * MSS;
    let fl = flows(&[(0, 1, size)]);
    let mut p = xp(json!({"nack": false, "rto": "50us"}));
    let out = call(1, Time::ZERO, &fl, |ctx| p.on_packet(ctx, &request(&fl[0])));
    let c = out.sends[0];
    let (mut at, mut tok) = *out.timers.iter().find(|t| untoken(t.1).1 == TIMER_RTO).unwrap();
    assert_eq!(at, Time::us(50));
    for (k, i) in [(0u64, 0u64), (2, 2), (3, 3)] {
        let mut cc = c;
        cc.aux = k;
        let _ = call(1, Time::us(10 + k), &fl, |ctx| p.on_packet(ctx, &data_for(&cc, i, size)));
    }
    let stop = Packet { kind: KIND_CREDIT_STOP, src: 0, dst: 1, flow: 0, size: 64, seq: size, ..Packet::default() };
    let out = call(1, Time::us(20), &fl, |ctx| p.on_packet(ctx, &stop));
    assert!(out.sends.iter().all(|s| s.kind != KIND_NACK), "no NACK at CREDIT_STOP");
    let mut nacks = vec![];
    while nacks.is_empty() {
        let out = call(1, at, &fl, |ctx| p.on_timer(ctx, tok));
        nacks = out.sends.iter().filter(|s| s.kind == KIND_NACK).map(|s| (at, s.seq, s.ack)).collect();
        let Some(&(a, t)) = out.timers.iter().find(|t| untoken(t.1).1 == TIMER_RTO) else { break };
        (at, tok) = (a, t);
    }
    assert_eq!(nacks, vec![(Time::us(63), MSS, 2 * MSS)], "rto after the last new data (13 us)");
    assert_eq!(p.flow_stats(0).timeouts, 1);
    assert!(p.feedback(0).is_some(), "still crediting");
}

#[test]
fn aeolus_config_errors_name_the_field() {
    let err = |v: serde_json::Value| ExpressPass::from_config(&v, &net(), 0).err().unwrap();
    assert_eq!(err(json!({"aeolus": true, "unsched_bytes": 0})).field(), "transport.unsched_bytes");
    assert_eq!(err(json!({"aeolus": true, "rto": 0})).field(), "transport.rto");
    assert_eq!(err(json!({"aeolus_mode": "fancy"})).field(), "transport.aeolus_mode");
    assert_eq!(err(json!({"aeolus": "yes"})).field(), "transport.aeolus");
    let e = err(json!({"aeolus": true, "aeolus_mode": "low_priority", "data_prio": 7}));
    assert_eq!(e.field(), "transport.aeolus_mode");
    let e = err(json!({"credit_from_request": true}));
    assert_eq!(e.field(), "transport.credit_from_request");
    assert!(e.to_string().contains("aeolus = true"), "{e}");
    assert_eq!(err(json!({"aeolus": true, "credit_from_request": "yes"})).field(), "transport.credit_from_request");
    let p = xpa(json!({"unsched_bytes": "3KB", "aeolus_probe": false})).params().clone();
    assert_eq!((p.unsched_pkts, p.aeolus.unwrap().probe, p.rto), (3, false, Time::ms(10)));
}

#[test]
fn config_defaults_and_errors_name_the_field() {
    let p = ExpressPassConfig::default().resolve(&net()).unwrap();
    assert_eq!((p.alpha, p.w_init, p.w_max, p.w_min, p.target_loss), (0.0625, 0.0625, 0.5, 0.01, 0.1));
    assert_eq!((p.jitter, p.credit_size_spread, p.symmetric_routing), (0.1, 8, true));
    assert_eq!(p.min_gap, GAP);
    assert_eq!((p.request_timeout, p.stop_timeout), (Time(RTT_PS) * 10, Time(RTT_PS) * 2));
    let err = |v: serde_json::Value| ExpressPass::from_config(&v, &net(), 0).err().unwrap();
    assert_eq!(err(json!({"nope": 1})).field(), "transport.nope");
    assert_eq!(err(json!({"alpha": 0})).field(), "transport.alpha");
    assert_eq!(err(json!({"alpha": 1.5})).field(), "transport.alpha");
    assert_eq!(err(json!({"w_init": 0.7})).field(), "transport.w_init");
    assert_eq!(err(json!({"target_loss": 1.0})).field(), "transport.target_loss");
    assert_eq!(err(json!({"jitter": -0.1})).field(), "transport.jitter");
    assert_eq!(err(json!({"credit_size_spread": "64B"})).field(), "transport.credit_size_spread");
    assert_eq!(err(json!({"update_period": 0})).field(), "transport.update_period");
    assert_eq!(err(json!({"data_prio": 8})).field(), "transport.data_prio");
    assert_eq!(err(json!({"update_period": "x"})).field(), "transport.update_period");
    let e = err(json!({"w_min": 0.9}));
    assert!(e.to_string().contains("w_max"), "{e}");
}
