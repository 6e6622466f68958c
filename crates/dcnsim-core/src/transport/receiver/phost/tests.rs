//! State-machine tests of pHost: each names the state and the event it drives.

use super::*;
use crate::transport::receiver::testkit::{self, call, net, MSS, RTT_PS};
use crate::units::Rate;
use serde_json::json;

/// T: one MTU at 10 Gbps.
fn t() -> Time {
    Rate::gbps(10).tx_time(Bytes(1500))
}

/// Flows `(src, dst, packets)`: `packets` full-MSS packets each.
fn flows(spec: &[(NodeId, NodeId, u64)]) -> Vec<FlowInfo> {
    let bytes: Vec<_> = spec.iter().map(|&(src, dst, pkts)| (src, dst, pkts * MSS)).collect();
    testkit::flows(&bytes)
}

fn phost(cfg: serde_json::Value) -> Phost {
    Phost::from_config(&cfg, &net()).unwrap()
}

fn data_for(tok: &Packet, size: u64) -> Packet {
    let payload = (size - tok.seq).min(MSS);
    Packet {
        src: tok.dst,
        dst: tok.src,
        flow: tok.flow,
        size: (payload + 40) as u32,
        payload: payload as u32,
        flags: PacketFlags(PacketFlags::DATA),
        kind: KIND_DATA,
        seq: tok.seq,
        ack: size,
        aux: tok.aux,
        ..Packet::default()
    }
}

fn rts(f: &FlowInfo) -> Packet {
    Packet { src: f.src, dst: f.dst, flow: f.id, size: 64, kind: KIND_RTS, seq: f.size.0, ..Packet::default() }
}

/// Tokens issued (time, packet) and completions (time, flow).
type Driven = (Vec<(Time, Packet)>, Vec<(Time, FlowId)>);

/// Drive one receiver: deliver the RTSs at t = 0, fire its timers, and answer each token
/// with its data packet `delay(flow, pkt)` later (None: the sender never answers / the
/// data is lost). Returns every token issued (time, packet) and the completions.
fn drive(p: &mut Phost, fl: &[FlowInfo], until: Time, delay: impl Fn(FlowId, u64) -> Option<Time>) -> Driven {
    enum Ev {
        Timer(u64),
        Pkt(Packet),
    }
    let host = fl[0].dst;
    let mut q: Vec<(Time, u64, Ev)> = Vec::new();
    let mut seq = 0u64;
    for f in fl {
        q.push((Time::ZERO, seq, Ev::Pkt(rts(f))));
        seq += 1;
    }
    let mut tokens = Vec::new();
    let mut done = Vec::new();
    loop {
        q.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
        let Some((now, _, ev)) = q.pop() else { break };
        if now > until {
            break;
        }
        let out = call(host, now, fl, |ctx| match ev {
            Ev::Timer(tk) => p.on_timer(ctx, tk),
            Ev::Pkt(pk) => p.on_packet(ctx, &pk),
        });
        for &(at, tk) in &out.timers {
            q.push((at, seq, Ev::Timer(tk)));
            seq += 1;
        }
        for &f in &out.completions {
            done.push((now, f));
        }
        for s in &out.sends {
            if s.kind == KIND_TOKEN {
                tokens.push((now, *s));
                if let Some(d) = delay(s.flow, s.seq / MSS) {
                    q.push((now + d, seq, Ev::Pkt(data_for(s, fl[s.flow as usize].size.0))));
                    seq += 1;
                }
            }
        }
    }
    (tokens, done)
}

#[test]
fn free_tokens_cover_exactly_one_bdp() {
    // One BDP at 10 Gbps over 6.5024 us is 8128 B: 6 packets of 1500 B (rounded up).
    let bdp_pkts = (10e9 * RTT_PS as f64 * 1e-12 / 8.0 / 1500.0).ceil() as u64;
    assert_eq!(bdp_pkts, 6);
    let send_all = |p: &mut Phost, fl: &[FlowInfo]| -> (Vec<Packet>, Vec<Packet>) {
        let out = call(0, Time::ZERO, fl, |ctx| p.start_flow(ctx, 0));
        let ctrl: Vec<Packet> = out.sends.clone();
        let mut data = Vec::new();
        // The NIC drains every T; no token ever arrives.
        for k in 1..20u64 {
            let out = call(0, t() * k, fl, |ctx| p.on_nic_idle(ctx));
            data.extend(out.sends);
        }
        (ctrl, data)
    };
    let fl = flows(&[(0, 1, 100)]);
    let mut p = phost(json!({}));
    let (ctrl, data) = send_all(&mut p, &fl);
    assert_eq!(ctrl.len(), 1);
    assert_eq!((ctrl[0].kind, ctrl[0].seq, ctrl[0].prio), (KIND_RTS, 100 * MSS, 0), "RTS with the size, class 0");
    assert_eq!(data.len() as u64, bdp_pkts, "exactly one BDP of free packets");
    for (i, d) in data.iter().enumerate() {
        assert!(is_free_data(d));
        assert_eq!((d.seq, d.payload as u64, d.prio), (i as u64 * MSS, MSS, 1));
        assert!(!d.flags.has(PacketFlags::UNSCHEDULED), "pHost itself does not flag them");
    }
    // A flow shorter than one BDP sends all of itself.
    let fl3 = flows(&[(0, 1, 3)]);
    assert_eq!(send_all(&mut phost(json!({})), &fl3).1.len(), 3);
    // The authors' simulator's variant: flows longer than one BDP get none.
    assert_eq!(send_all(&mut phost(json!({"free_tokens_short_only": true})), &fl).1.len(), 0);
    assert_eq!(send_all(&mut phost(json!({"free_tokens_short_only": true})), &fl3).1.len(), 3);
    // The isolated first-BDP phase: an Aeolus wrapper flags these packets UNSCHEDULED.
    let mut p = phost(json!({}));
    let f = FreeTokens { flags: PacketFlags::UNSCHEDULED, ..*p.free_tokens() };
    p.set_free_tokens(f);
    let (_, data) = send_all(&mut p, &fl);
    assert_eq!(data.len(), 6);
    assert!(data.iter().all(|d| d.flags.has(PacketFlags::UNSCHEDULED) && d.is_data()));
}

#[test]
fn tokens_go_in_srpt_order_one_mtu_time_apart() {
    // Three flows to host 3: 30, 10 and 20 packets; senders answer every token 2 us later.
    let fl = flows(&[(0, 3, 30), (1, 3, 10), (2, 3, 20)]);
    let mut p = phost(json!({"free_tokens": 0}));
    let (tokens, done) = drive(&mut p, &fl, Time::ms(1), |_, _| Some(Time::us(2)));
    let order: Vec<FlowId> = tokens.iter().map(|(_, tk)| tk.flow).collect();
    let mut want = vec![1; 10];
    want.extend(vec![2; 20]);
    want.extend(vec![0; 30]);
    assert_eq!(order, want, "shortest flow first, then the next shortest");
    for w in tokens.windows(2) {
        assert_eq!(w[1].0 - w[0].0, t(), "one token per MTU transmission time");
    }
    assert_eq!(tokens[0].0, Time::ZERO);
    // Every token names the next packet of its flow, carries the TTL and the data class.
    let pkts: Vec<u64> = tokens.iter().filter(|x| x.1.flow == 1).map(|x| x.1.seq / MSS).collect();
    assert_eq!(pkts, (0..10).collect::<Vec<_>>());
    assert!(tokens.iter().all(|x| x.1.ts == t().mul_f64(1.5) && x.1.rank == 2 && x.1.prio == 0));
    let order_done: Vec<FlowId> = done.iter().map(|d| d.1).collect();
    assert_eq!(order_done, vec![1, 2, 0]);
    assert_eq!(p.flow_stats(0).timeouts, 0);
}

#[test]
fn an_expired_token_is_not_used() {
    let fl = flows(&[(0, 1, 100), (0, 2, 50)]);
    let mut p = phost(json!({"free_tokens": 0}));
    let out = call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
    assert_eq!(out.sends.len(), 1, "RTS only, the NIC is now busy");
    let ttl = t().mul_f64(1.5);
    let mut tok = Packet {
        src: 1,
        dst: 0,
        flow: 0,
        size: 64,
        kind: KIND_TOKEN,
        seq: 0,
        aux: 0,
        ack: 100 * MSS,
        ts: ttl,
        rank: 2,
        ..Packet::default()
    };
    let t0 = Time::us(1);
    let out = call(0, t0, &fl, |ctx| p.on_packet(ctx, &tok));
    assert!(out.sends.is_empty(), "the NIC is still busy with the RTS");
    // The NIC frees up just after the token expired: nothing is sent.
    let out = call(0, t0 + ttl + Time(1), &fl, |ctx| p.on_nic_idle(ctx));
    assert!(out.sends.is_empty(), "an expired token is discarded");
    // A fresh token is used at once (the NIC is idle).
    tok.seq = MSS;
    tok.aux = 1;
    let out = call(0, Time::us(5), &fl, |ctx| p.on_packet(ctx, &tok));
    assert_eq!(out.sends.len(), 1);
    let d = out.sends[0];
    assert_eq!((d.kind, d.seq, d.aux, d.prio, is_free_data(&d)), (KIND_DATA, MSS, 1, 2, false));
    // Source policy: with tokens of two flows held, the one with fewer remaining bytes
    // (as its destination reported) goes first, even if its token arrived later.
    let _ = call(0, Time::us(6), &fl, |ctx| p.start_flow(ctx, 1));
    let mut a = tok;
    a.seq = 2 * MSS;
    a.aux = 2;
    a.ack = 98 * MSS;
    let mut b = tok;
    b.src = 2;
    b.flow = 1;
    b.seq = 0;
    b.aux = 0;
    b.ack = 50 * MSS;
    let t1 = Time::us(7);
    assert!(call(0, t1, &fl, |ctx| p.on_packet(ctx, &a)).sends.is_empty());
    assert!(call(0, t1, &fl, |ctx| p.on_packet(ctx, &b)).sends.is_empty());
    let out = call(0, t1 + Time::ns(100), &fl, |ctx| p.on_nic_idle(ctx));
    assert_eq!((out.sends[0].flow, out.sends[0].seq), (1, 0));
    let out = call(0, t1 + Time::ns(200), &fl, |ctx| p.on_nic_idle(ctx));
    assert_eq!((out.sends[0].flow, out.sends[0].seq), (0, 2 * MSS));
}

#[test]
fn an_unresponsive_sender_is_downgraded_and_the_next_flow_gets_the_tokens() {
    // Flow 0 (10 packets, preferred by SRPT) never answers; flow 1 (100 packets) does.
    let fl = flows(&[(0, 3, 10), (1, 3, 100)]);
    let mut p = phost(json!({"free_tokens": 0}));
    assert_eq!(p.params().downgrade_tokens, 6, "default: one BDP of tokens");
    assert_eq!(p.params().downgrade_time, t() * 25);
    let until = t() * 79;
    let (tokens, _) = drive(&mut p, &fl, until, |f, _| (f == 1).then(|| Time::us(2)));
    let slot = |x: &(Time, Packet)| x.0 .0 / t().0;
    let to0: Vec<u64> = tokens.iter().filter(|x| x.1.flow == 0).map(slot).collect();
    // 6 tokens unanswered -> skipped; one probe token 25 T after its last token, again.
    assert_eq!(to0, vec![0, 1, 2, 3, 4, 5, 30, 55]);
    // Every other slot went to flow 1: the receiver never idled.
    let to1: Vec<u64> = tokens.iter().filter(|x| x.1.flow == 1).map(slot).collect();
    let want: Vec<u64> = (6..=79).filter(|s| ![30, 55].contains(s)).collect();
    assert_eq!(to1, want);
}

#[test]
fn missing_packets_get_tokens_again_after_the_retransmission_timeout() {
    // 5 packets, no free tokens; the data for packet 2 is lost the first time.
    let fl = flows(&[(0, 3, 5)]);
    let mut p = phost(json!({"free_tokens": 0}));
    let rto = p.params().retx_timeout;
    assert_eq!(rto, (t() * 9).max(Time(RTT_PS) + t() * 2));
    let lost = std::cell::Cell::new(true);
    let (tokens, done) =
        drive(
            &mut p,
            &fl,
            Time::ms(1),
            |_, pkt| {
                if pkt == 2 && lost.replace(false) {
                    None
                } else {
                    Some(Time::us(2))
                }
            },
        );
    let seen: Vec<(u64, u64)> = tokens.iter().map(|x| (x.0 .0, x.1.seq / MSS)).collect();
    let last_first_pass = t() * 4;
    // The retransmission round starts at the first pacer slot after last token + timeout.
    assert_eq!(seen[..5], [(0, 0), (t().0, 1), (2 * t().0, 2), (3 * t().0, 3), (4 * t().0, 4)]);
    assert_eq!(seen.len(), 6);
    assert_eq!(seen[5], ((last_first_pass + rto).0, 2));
    assert_eq!(p.flow_stats(0).timeouts, 1);
    assert_eq!(done, vec![(last_first_pass + rto + Time::us(2), 0)]);
}

#[test]
fn config_defaults_and_errors_name_the_field() {
    let p = phost(serde_json::Value::Null).params().clone();
    assert_eq!(p.free.packets, 6);
    assert_eq!(p.token_interval, t());
    assert_eq!(p.token_ttl, Time(1_800_000));
    assert_eq!((p.ctrl_prio, p.free.prio, p.data_prio), (0, 1, 2));
    let mut one = net();
    one.priorities = 1;
    let q = Phost::from_config(&json!({}), &one).unwrap();
    assert_eq!((q.params().ctrl_prio, q.params().free.prio, q.params().data_prio), (0, 0, 0));
    let err = |v: serde_json::Value| Phost::from_config(&v, &net()).err().unwrap();
    assert_eq!(err(json!({"nope": 1})).field(), "transport.nope");
    assert_eq!(err(json!({"token_ttl": "abc"})).field(), "transport.token_ttl");
    assert_eq!(err(json!({"token_ttl": 0})).field(), "transport.token_ttl");
    assert_eq!(err(json!({"downgrade_tokens": 0})).field(), "transport.downgrade_tokens");
    assert_eq!(err(json!({"data_prio": 8})).field(), "transport.data_prio");
    let e = Phost::from_config(&json!({"free_prio": 1}), &one).err().unwrap();
    assert_eq!(e.field(), "transport.free_prio");
    assert!(e.to_string().contains("network.priorities is 1"), "{e}");
}

// ------------------------------------------------------------ pHost + Aeolus

/// Source with Aeolus: the free-token packets go flagged UNSCHEDULED in the scheduled
/// data's class (one FIFO), the probe right behind the last one; a scheduled token that
/// arrives during the free burst ends it at once (probe now, the rest goes scheduled).
#[test]
fn aeolus_free_packets_are_unscheduled_and_the_probe_follows_them() {
    let p0 = phost(json!({"aeolus": true}));
    assert_eq!((p0.params().free.prio, p0.params().data_prio), (2, 2));
    assert_eq!(p0.params().free.flags, PacketFlags::UNSCHEDULED);
    let fl = flows(&[(0, 1, 100)]);
    let mut p = phost(json!({"aeolus": true}));
    call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
    let mut sent = Vec::new();
    for k in 1..10u64 {
        let out = call(0, t() * k, &fl, |ctx| p.on_nic_idle(ctx));
        sent.extend(out.sends);
    }
    let kinds: Vec<u8> = sent.iter().map(|x| x.kind).collect();
    assert_eq!(kinds, [[KIND_DATA; 6].as_slice(), &[KIND_PROBE]].concat());
    for d in &sent[..6] {
        assert!(is_free_data(d) && d.flags.has(PacketFlags::UNSCHEDULED));
        assert_eq!(d.prio, 2);
    }
    let pr = sent[6];
    assert_eq!((pr.prio, pr.size, pr.aux, pr.ack, pr.dst), (2, 64, 5, 100 * MSS, 1));
    assert!(!pr.flags.has(PacketFlags::UNSCHEDULED) && !pr.is_data());
    // A token during the burst: probe at once (naming packet 2), free tokens dropped;
    // only the token's packet follows, scheduled.
    let mut p = phost(json!({"aeolus": true}));
    call(0, Time::ZERO, &fl, |ctx| p.start_flow(ctx, 0));
    let mut sent = Vec::new();
    for k in 1..4u64 {
        sent.extend(call(0, t() * k, &fl, |ctx| p.on_nic_idle(ctx)).sends);
    }
    assert_eq!(sent.len(), 3);
    let tok = Packet {
        src: 1,
        dst: 0,
        flow: 0,
        kind: KIND_TOKEN,
        seq: 6 * MSS,
        aux: 6,
        ack: 97 * MSS,
        ts: t() * 2,
        rank: 2,
        ..Packet::default()
    };
    let out = call(0, t() * 3 + Time::ns(1), &fl, |ctx| p.on_packet(ctx, &tok));
    assert_eq!(out.sends.len(), 1);
    assert_eq!((out.sends[0].kind, out.sends[0].aux), (KIND_PROBE, 2));
    let out = call(0, t() * 4, &fl, |ctx| p.on_nic_idle(ctx));
    assert_eq!(out.sends.len(), 1);
    assert_eq!((out.sends[0].seq, out.sends[0].flags.0), (6 * MSS, PacketFlags::DATA));
    assert!(call(0, t() * 5, &fl, |ctx| p.on_nic_idle(ctx)).sends.is_empty());
}

/// Destination with Aeolus: of the 6 free packets of a 20-packet flow, 1, 4 and 5 are
/// dropped. Packet 2's arrival proves 1 lost, the probe proves 4 and 5 lost; each gets
/// exactly one token, ahead of the new packets still waiting for theirs, with no
/// retransmission round; the flow completes.
#[test]
fn aeolus_destination_tokens_each_lost_free_packet_once() {
    let fl = flows(&[(0, 1, 20)]);
    let mut p = phost(json!({"aeolus": true}));
    let free = |i: u64| Packet {
        src: 0,
        dst: 1,
        flow: 0,
        size: 1500,
        payload: MSS as u32,
        flags: PacketFlags(PacketFlags::DATA | PacketFlags::UNSCHEDULED),
        kind: KIND_DATA,
        seq: i * MSS,
        ack: 20 * MSS,
        aux: i,
        aux2: AUX2_FREE,
        ..Packet::default()
    };
    let probe = aeolus::probe_packet(aeolus::Wire { mss: MSS, ctrl_size: 64 }, KIND_PROBE, 1, 0, 5, 20 * MSS, 2);
    let t1 = Time::us(5);
    let mut q: Vec<(Time, u64, Packet)> = vec![(Time::ZERO, 0, rts(&fl[0]))];
    for (k, i) in [(0u64, 0u64), (2, 2), (3, 3)] {
        q.push((t1 + t() * k, 1 + k, free(i)));
    }
    q.push((t1 + t() * 6, 9, probe));
    let mut timers: Vec<(Time, u64)> = Vec::new();
    let mut tokens: Vec<(Time, u64)> = Vec::new();
    let mut done = None;
    let mut seq = 100;
    loop {
        q.sort_by_key(|e| std::cmp::Reverse((e.0, e.1)));
        timers.sort_by_key(|e| std::cmp::Reverse(e.0));
        let tq = timers.last().map(|x| x.0);
        let pq = q.last().map(|x| x.0);
        let out = match (pq, tq) {
            (None, None) => break,
            (Some(a), Some(b)) if b < a => {
                let (now, tk) = timers.pop().unwrap();
                (now, call(1, now, &fl, |ctx| p.on_timer(ctx, tk)))
            }
            (None, Some(_)) => {
                let (now, tk) = timers.pop().unwrap();
                (now, call(1, now, &fl, |ctx| p.on_timer(ctx, tk)))
            }
            _ => {
                let (now, _, pk) = q.pop().unwrap();
                (now, call(1, now, &fl, |ctx| p.on_packet(ctx, &pk)))
            }
        };
        let (now, out) = out;
        if now > Time::us(200) {
            break;
        }
        timers.extend(out.timers.iter().copied());
        if !out.completions.is_empty() {
            done = Some(now);
        }
        for tk in out.sends.iter().filter(|x| x.kind == KIND_TOKEN) {
            tokens.push((now, tk.seq / MSS));
            q.push((now + Time(RTT_PS), seq, data_for(tk, 20 * MSS)));
            seq += 1;
        }
    }
    let order: Vec<u64> = tokens.iter().map(|x| x.1).collect();
    for i in [1u64, 4, 5] {
        assert_eq!(order.iter().filter(|&&j| j == i).count(), 1, "packet {i} tokened once: {order:?}");
    }
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(sorted, [1, 4, 5].iter().copied().chain(6..20).collect::<Vec<_>>(), "{order:?}");
    // 1's token in the first pacer slot after packet 2 arrived; 4 and 5 right after the probe.
    let at = |i: u64| tokens.iter().find(|x| x.1 == i).unwrap().0;
    assert!(at(1) > t1 + t() * 2 && at(1) <= t1 + t() * 3, "{:?}", at(1));
    assert!(at(4) > t1 + t() * 6 && at(5) <= t1 + t() * 8, "{:?} {:?}", at(4), at(5));
    assert!(done.is_some(), "the flow completes");
    assert_eq!(p.flow_stats(0).timeouts, 0, "no retransmission round");
}

#[test]
fn aeolus_config() {
    let e = Phost::from_config(&json!({"aeolus_probe": false}), &net()).err().unwrap();
    assert_eq!(e.field(), "transport.aeolus_probe");
    let e = Phost::from_config(&json!({"aeolus": "on"}), &net()).err().unwrap();
    assert_eq!(e.field(), "transport.aeolus");
    let p = phost(json!({"aeolus": true, "aeolus_probe": false, "free_prio": 1}));
    assert_eq!(p.params().aeolus, Some(AeolusConfig { mode: UnschedMode::SelectiveDrop, probe: false }));
    assert_eq!(p.params().free.prio, 1, "an explicit class is kept");
}
