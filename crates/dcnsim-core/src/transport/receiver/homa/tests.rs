//! State-machine tests of Homa: each names the state and the event it drives.

use super::*;
use crate::packet::PacketArena;
use crate::queue::selective::{SelectiveDrop, SelectiveDropConfig, DROP_SELECTIVE};
use crate::queue::{PortEffects, QueueDisc};
use crate::transport::receiver::testkit::{call, flows, net, MSS};
use crate::transport::Actions;
use crate::units::Rate;
use serde_json::json;

fn homa(cfg: serde_json::Value) -> Homa {
    Homa::from_config(&cfg, &net()).unwrap()
}

fn kinds(a: &Actions, kind: u8) -> Vec<Packet> {
    a.sends.iter().filter(|p| p.kind == kind).copied().collect()
}

/// A data packet of flow `f` (index `idx`) as the sender would send it, addressed to `dst`.
fn data(f: &FlowInfo, idx: u64, unscheduled: bool) -> Packet {
    let payload = (f.size.0 - idx * MSS).min(MSS);
    let mut flags = PacketFlags(PacketFlags::DATA);
    if unscheduled {
        flags.set(PacketFlags::UNSCHEDULED);
    }
    Packet {
        src: f.src,
        dst: f.dst,
        flow: f.id,
        size: (payload + 40) as u32,
        payload: payload as u32,
        flags,
        kind: KIND_DATA,
        seq: idx * MSS,
        ack: f.size.0,
        ..Packet::default()
    }
}

/// Flow 0 starts at time 0; what its sender sends then and when its NIC goes idle `n`
/// times right after.
fn start_and_drain(h: &mut Homa, fl: &[FlowInfo], n: usize) -> Vec<Packet> {
    let a = call(0, Time::ZERO, fl, |c| h.start_flow(c, 0));
    let mut sent = a.sends.clone();
    sent.extend(drain(h, fl, 0, Time::ns(1200), n));
    sent
}

/// The sender's data packets when its NIC goes idle `n` times from `t`.
fn drain(h: &mut Homa, fl: &[FlowInfo], host: NodeId, t: Time, n: usize) -> Vec<Packet> {
    let mut out = Vec::new();
    for _ in 0..n {
        let a = call(host, t, fl, |c| h.on_nic_idle(c));
        out.extend(a.sends.iter().copied());
    }
    out
}

#[test]
fn defaults_follow_the_network() {
    let h = homa(serde_json::Value::Null);
    let p = h.params();
    // One BDP: 10 Gbps x 6.5024 us = 8128 B -> 6 unscheduled packets.
    assert_eq!(p.rtt_bytes, 8128);
    assert_eq!(p.unsched_packets(1_000_000), 6);
    assert_eq!(p.unsched_bytes(3000), 3000);
    // Without a CDF: 2 unscheduled levels, 6 scheduled, overcommitment 6.
    assert_eq!((p.unsched_prios, p.sched_prios, p.overcommitment), (2, 6, 6));
    assert_eq!(p.cutoffs, vec![4064]);
    assert_eq!(p.resend_timeout, Time::ms(5));
    assert_eq!((p.resend_ranges, p.resend_per_peer), (ResendRanges::All, 0));
    assert!(!p.rank_until_received && p.resend_class == ResendClass::Message);
    assert_eq!(p.sender_timeout, Time::ms(10));
    assert!(p.aeolus.is_none());
}

#[test]
fn unscheduled_cutoffs_split_unscheduled_bytes_evenly() {
    // Step CDF: 60% of messages 1 KB, 20% 3 KB, 6% 20 KB, 14% 1 MB; rtt_bytes 10 KB.
    // Unscheduled bytes per message: 1000, 3000, 10000, 10000 -> per-message-average
    // contributions 600, 600, 600, 1400 (total 3200). Four levels: each should carry
    // 800; the cumulative sums 600, 1200, 1800, 3200 first reach 800, 1600, 2400 at
    // 3 KB, 20 KB and 1 MB.
    let cdf = vec![(1000u64, 0.6), (3000, 0.8), (20_000, 0.86), (1_000_000, 1.0)];
    assert_eq!(unsched_cutoffs(&cdf, 10_000, 4), vec![3000, 20_000, 1_000_000]);
    assert_eq!(unsched_cutoffs(&cdf, 10_000, 2), vec![20_000]);
    assert_eq!(unsched_cutoffs(&cdf, 10_000, 1), Vec::<u64>::new());
    // Fraction of bytes unscheduled: 3200 / (600 + 600 + 1200 + 140000).
    let f = unsched_byte_fraction(&cdf, 10_000);
    assert!((f - 3200.0 / 142_400.0).abs() < 1e-12);
    // Through the configuration: with 8 classes, round(8 x 0.0225) = 0 -> at least 1
    // unscheduled level, 7 scheduled, overcommitment 7; no cutoffs.
    let mut n = net();
    n.size_cdf = Some(cdf.clone());
    let p = HomaConfig::parse(&json!({"rtt_bytes": "10000B"})).unwrap().resolve(&n).unwrap();
    assert_eq!((p.unsched_prios, p.sched_prios, p.overcommitment, p.from_cdf), (1, 7, 7, true));
    // Four unscheduled levels asked for: the cutoffs above, and each message's class.
    let p = HomaConfig::parse(&json!({"rtt_bytes": "10000B", "unsched_prios": 4})).unwrap().resolve(&n).unwrap();
    assert_eq!(p.cutoffs, vec![3000, 20_000, 1_000_000]);
    assert_eq!(p.sched_prios, 4);
    let classes: Vec<u8> =
        [1, 1000, 3000, 3001, 20_000, 50_000, 1_000_000, 5_000_000].iter().map(|&s| p.unsched_prio(s)).collect();
    assert_eq!(classes, vec![0, 0, 0, 1, 1, 2, 2, 3]);
    // A workload whose bytes are mostly unscheduled gets most levels for them: 75% of
    // messages 1 KB, 25% 2 KB (all unscheduled) -> f = 1 -> 7 unscheduled levels.
    n.size_cdf = Some(vec![(1000, 0.75), (2000, 1.0)]);
    let p = HomaConfig::parse(&json!({"rtt_bytes": "10000B"})).unwrap().resolve(&n).unwrap();
    assert_eq!((p.unsched_prios, p.sched_prios), (7, 1));
}

#[test]
fn scheduled_classes_by_rank_use_the_lowest_levels_first() {
    let p = homa(json!({"unsched_prios": 2})).params().clone();
    // Scheduled levels are classes 2..=7. One granted message: the lowest (7).
    assert_eq!(p.sched_prio(0, 1), 7);
    // Three: 5, 6, 7 with the shortest on 5.
    assert_eq!((p.sched_prio(0, 3), p.sched_prio(1, 3), p.sched_prio(2, 3)), (5, 6, 7));
    // More messages than levels share the lowest.
    assert_eq!((p.sched_prio(0, 8), p.sched_prio(5, 8), p.sched_prio(7, 8)), (2, 7, 7));
}

/// Three messages to host 3 of 50, 35 and 20 packets (flows 0, 1, 2) announce
/// themselves longest first. Afterwards one more packet of each arrives; the receiver
/// grants (keeps `rtt_bytes` ahead) only the `overcommitment` messages with the fewest
/// remaining bytes, the shortest on the highest scheduled class of the lowest levels in
/// use. With overcommitment 1, completing the shortest hands the grants to the next
/// shortest (35 packets), not to the older 50-packet message.
#[test]
fn grants_go_to_the_fewest_remaining_bytes_first() {
    let fl = flows(&[(0, 3, 50 * MSS), (1, 3, 35 * MSS), (2, 3, 20 * MSS)]);
    for (k, expect) in [(1usize, vec![(2u32, 7u32)]), (2, vec![(1, 7), (2, 6)]), (3, vec![(0, 7), (1, 6), (2, 5)])] {
        let mut h = homa(json!({"overcommitment": k, "unsched_prios": 2}));
        // Announcements: each newcomer is the shortest so far and is granted at once.
        for f in &fl {
            let a = call(3, Time::us(5), &fl, |c| h.on_packet(c, &data(f, 0, true)));
            let g = kinds(&a, KIND_GRANT);
            assert_eq!(g.len(), 1, "k = {k}: flow {} announced", f.id);
            assert_eq!((g[0].flow, g[0].seq), (f.id, MSS + 8128));
        }
        // One more packet of each: grants only for the k shortest, by rank.
        let mut got = Vec::new();
        for f in &fl {
            let a = call(3, Time::us(6), &fl, |c| h.on_packet(c, &data(f, 1, true)));
            for g in kinds(&a, KIND_GRANT) {
                assert_eq!(g.seq, 2 * MSS + 8128);
                got.push((g.flow, g.rank));
            }
        }
        assert_eq!(got, expect, "overcommitment {k}");
    }
    // Hand-over on completion with overcommitment 1.
    let mut h = homa(json!({"overcommitment": 1}));
    for f in &fl {
        call(3, Time::us(5), &fl, |c| h.on_packet(c, &data(f, 0, true)));
    }
    let mut t = Time::us(10);
    for i in 1..20 {
        t += Time::ns(1200);
        let a = call(3, t, &fl, |c| h.on_packet(c, &data(&fl[2], i, i < 6)));
        let g = kinds(&a, KIND_GRANT);
        if i < 19 {
            assert!(g.iter().all(|g| g.flow == 2), "only the shortest is granted");
        } else {
            assert_eq!(a.completions, vec![2]);
        }
    }
    // Now flow 1 (35 packets) holds the grants, not the older 50-packet flow 0 (whose
    // offsets are both still at their announcement grant).
    let a = call(3, t, &fl, |c| h.on_packet(c, &data(&fl[0], 1, true)));
    assert!(kinds(&a, KIND_GRANT).is_empty());
    let a = call(3, t, &fl, |c| h.on_packet(c, &data(&fl[1], 1, true)));
    let g = kinds(&a, KIND_GRANT);
    assert_eq!((g.len(), g[0].flow, g[0].seq), (1, 1, 2 * MSS + 8128), "35 packets before 50");
}

#[test]
fn sender_sends_unscheduled_at_once_then_only_what_is_granted() {
    let fl = flows(&[(0, 1, 20 * MSS)]);
    let mut h = homa(json!({"unsched_prios": 2}));
    let a = call(0, Time::ZERO, &fl, |c| h.start_flow(c, 0));
    let mut sent = kinds(&a, KIND_DATA);
    sent.extend(drain(&mut h, &fl, 0, Time::ns(100), 10));
    // Six unscheduled packets (rtt_bytes 8128 B), class of a 29.2 KB message: level 1.
    assert_eq!(sent.len(), 6);
    assert!(sent.iter().all(|p| p.flags.has(PacketFlags::UNSCHEDULED) && p.prio == 1 && p.ack == 20 * MSS));
    // A grant to offset 8 packets: two scheduled packets in the grant's class.
    let g = Packet { src: 1, dst: 0, flow: 0, kind: KIND_GRANT, seq: 7 * MSS + 1, rank: 6, ..Packet::default() };
    let a = call(0, Time::us(7), &fl, |c| h.on_packet(c, &g));
    let mut s = kinds(&a, KIND_DATA);
    s.extend(drain(&mut h, &fl, 0, Time::us(8), 5));
    assert_eq!(s.iter().map(|p| p.seq / MSS).collect::<Vec<_>>(), vec![6, 7]);
    assert!(s.iter().all(|p| !p.flags.has(PacketFlags::UNSCHEDULED) && p.prio == 6));
}

/// A fully unscheduled 3-packet message loses its middle packet. After `resend_timeout`
/// without progress the receiver sends a RESEND for exactly that packet; the sender
/// (which kept the message) retransmits it; the message completes and is ACKed.
#[test]
fn resend_after_timeout_triggers_the_retransmission() {
    let fl = flows(&[(0, 1, 3 * MSS)]);
    let mut h = homa(json!({"resend_timeout": "100us"}));
    let a = call(0, Time::ZERO, &fl, |c| h.start_flow(c, 0));
    assert_eq!(a.timers.len(), 1, "sender timer");
    assert_eq!(a.timers[0].0, Time::us(200), "sender_timeout = 2 x resend_timeout");
    let mut sent = kinds(&a, KIND_DATA);
    sent.extend(drain(&mut h, &fl, 0, Time::ns(1200), 3));
    assert_eq!(sent.len(), 3);
    let a0 = call(1, Time::us(5), &fl, |c| h.on_packet(c, &data(&fl[0], 0, true)));
    let (at, tok) = a0.timers[0];
    assert_eq!(at, Time::us(105));
    let a2 = call(1, Time::us(6), &fl, |c| h.on_packet(c, &data(&fl[0], 2, true)));
    assert!(a2.sends.is_empty() && a2.completions.is_empty());
    // At 105 us the last progress was at 6 us: re-armed for 106 us, nothing sent.
    let a = call(1, at, &fl, |c| h.on_timer(c, tok));
    assert!(a.sends.is_empty());
    let (at, tok) = a.timers[0];
    assert_eq!(at, Time::us(106));
    let a = call(1, at, &fl, |c| h.on_timer(c, tok));
    let r = kinds(&a, KIND_RESEND);
    assert_eq!(r.len(), 1);
    assert_eq!((r[0].seq, r[0].ack, r[0].dst), (MSS, MSS, 0));
    // The sender retransmits packet 1 at once (no grant needed).
    let mut rs = r[0];
    rs.src = 1;
    let a = call(0, Time::us(110), &fl, |c| h.on_nic_idle(c));
    assert!(a.sends.is_empty(), "nothing to send before the RESEND");
    let a = call(0, Time::us(110), &fl, |c| h.on_packet(c, &rs));
    let d = kinds(&a, KIND_DATA);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].seq, d[0].aux2 & DATA_RETX), (MSS, DATA_RETX));
    assert_eq!(h.flow_stats(0), FlowStats { retx_bytes: MSS, timeouts: 1, ..FlowStats::default() });
    // It arrives: complete, ACK to the sender, which forgets the message.
    let a = call(1, Time::us(115), &fl, |c| h.on_packet(c, &d[0]));
    assert_eq!(a.completions, vec![0]);
    let ack = kinds(&a, KIND_ACK);
    call(0, Time::us(120), &fl, |c| h.on_packet(c, &ack[0]));
    assert!(h.sender_done(0));
    // A late sender timer does nothing.
    let a = call(0, Time::us(200), &fl, |c| h.on_timer(c, token(0, TIMER_SEND, 1)));
    assert!(a.sends.is_empty());
}

/// All packets of a message are lost: the receiver never hears of it, the sender's own
/// timeout resends the first packet, which introduces the message (a counted timeout);
/// the receiver then asks for the rest by RESEND. A second sender-timeout packet for a
/// message the receiver knows is answered BUSY and not counted.
#[test]
fn sender_timeout_reintroduces_a_message_the_receiver_never_saw() {
    let fl = flows(&[(0, 1, 2 * MSS)]);
    let mut h = homa(json!({"resend_timeout": "100us"}));
    let a = call(0, Time::ZERO, &fl, |c| h.start_flow(c, 0));
    let (at, tok) = a.timers[0];
    drain(&mut h, &fl, 0, Time::ns(1200), 2);
    let a = call(0, at, &fl, |c| h.on_timer(c, tok));
    // The timer was armed at 0 + 200 us but the last packet left at 1.2 us: re-armed.
    assert!(a.sends.is_empty());
    let (at, tok) = a.timers[0];
    let a = call(0, at, &fl, |c| h.on_timer(c, tok));
    let d = kinds(&a, KIND_DATA);
    assert_eq!((d.len(), d[0].seq, d[0].aux2), (1, 0, DATA_RETX | DATA_SENDER_TIMEOUT));
    let a = call(1, at + Time::us(5), &fl, |c| h.on_packet(c, &d[0]));
    assert!(kinds(&a, KIND_BUSY).is_empty());
    assert_eq!(h.flow_stats(0).timeouts, 1);
    let again = call(1, at + Time::us(6), &fl, |c| h.on_packet(c, &d[0]));
    assert_eq!(kinds(&again, KIND_BUSY).len(), 1);
    assert_eq!(h.flow_stats(0).timeouts, 1, "a known message: not a timeout");
}

/// Homa + Aeolus, state machine: a 10-packet message sends its 6 unscheduled packets
/// and the probe right after the last one. Packets 2, 4 and 5 are dropped. The receiver
/// ACKs 0, 1, 3 and the probe, learns the three losses and grants them on top of
/// rtt_bytes. The sender, from the SACK of 3 and the probe ACK, resends 2, 4, 5 as
/// scheduled packets in the grant's class before any new data, each exactly once; no
/// timer is involved.
#[test]
fn aeolus_recovers_lost_unscheduled_packets_via_the_probe_without_timeout() {
    let fl = flows(&[(0, 1, 10 * MSS)]);
    let mut h = homa(json!({"aeolus": true, "unsched_prios": 2}));
    let sent = start_and_drain(&mut h, &fl, 6);
    let seqs: Vec<(u8, u64)> = sent.iter().map(|p| (p.kind, p.seq / MSS)).collect();
    assert_eq!(
        seqs,
        vec![(1, 0), (1, 1), (1, 2), (1, 3), (1, 4), (1, 5), (KIND_PROBE, 5)],
        "probe right after the last unscheduled packet"
    );
    let probe = sent[6];
    assert!(!probe.flags.has(PacketFlags::UNSCHEDULED), "the probe is not selectively droppable");
    assert_eq!((probe.prio, probe.size, probe.ack), (sent[5].prio, 64, 10 * MSS));
    // Receiver: 0, 1, 3 arrive, then the probe.
    let mut to_sender = Vec::new();
    for i in [0u64, 1, 3] {
        let a = call(1, Time::us(5 + i), &fl, |c| h.on_packet(c, &data(&fl[0], i, true)));
        to_sender.extend(a.sends.iter().copied());
    }
    let mut pr = probe;
    pr.src = 0;
    let a = call(1, Time::us(9), &fl, |c| h.on_packet(c, &pr));
    to_sender.extend(a.sends.iter().copied());
    let k: Vec<u8> = to_sender.iter().map(|p| p.kind).collect();
    // UACK 0, UACK 1, GRANT (on 1), UACK 3, GRANT (on 3), PROBE_ACK, GRANT (on probe).
    assert_eq!(k.iter().filter(|&&x| x == KIND_UACK).count(), 3);
    assert_eq!(k.iter().filter(|&&x| x == KIND_PROBE_ACK).count(), 1);
    let last_grant = to_sender.iter().rev().find(|p| p.kind == KIND_GRANT).unwrap();
    // received 3 packets + 3 lost + rtt_bytes, capped at size + lost = 13 packets.
    assert_eq!(last_grant.seq, (6 * MSS + 8128).min(13 * MSS));
    // Sender: the feedback arrives while its NIC is busy (so every decision sees all of
    // it); the NIC then goes idle repeatedly.
    h.hosts[0].nic_busy = true;
    let mut out = Vec::new();
    for p in &to_sender {
        let mut p = *p;
        p.src = 1;
        let a = call(0, Time::us(12), &fl, |c| h.on_packet(c, &p));
        out.extend(a.sends.iter().copied());
    }
    out.extend(drain(&mut h, &fl, 0, Time::us(13), 12));
    let d: Vec<&Packet> = out.iter().filter(|p| p.kind == KIND_DATA).collect();
    let order: Vec<u64> = d.iter().map(|p| p.seq / MSS).collect();
    // Credit: grant 6 x 1460 + 8128 = 16888 B minus the 8760 B charged for the burst:
    // six packets (the last one crosses the offset).
    assert_eq!(order, vec![2, 4, 5, 6, 7, 8], "lost first, then new data");
    assert!(d.iter().all(|p| !p.flags.has(PacketFlags::UNSCHEDULED) && p.prio == last_grant.rank as u8));
    assert!(d[..3].iter().all(|p| p.aux2 & DATA_RETX != 0));
    let s = h.aeolus_sender(0).unwrap();
    assert_eq!((s.detected_lost(), s.resent()), (3, 3));
    assert_eq!(h.flow_stats(0), FlowStats { retx_bytes: 3 * MSS, timeouts: 0, ..FlowStats::default() });
    // More grants never resend them again.
    let g = Packet { src: 1, dst: 0, flow: 0, kind: KIND_GRANT, seq: 20 * MSS, rank: 7, ..Packet::default() };
    h.hosts[0].nic_busy = true;
    call(0, Time::us(20), &fl, |c| h.on_packet(c, &g));
    let d: Vec<u64> = drain(&mut h, &fl, 0, Time::us(21), 5).iter().map(|p| p.seq / MSS).collect();
    assert_eq!(d, vec![9], "only the last new packet");
    assert_eq!(h.aeolus_sender(0).unwrap().resent(), 3);
}

/// Two views of one loss: the sender declares unscheduled packet 5 lost (its ACK never
/// arrived, as when the probe's ACK overtakes it on another path or the ACK is dropped)
/// while the receiver holds it. The sender pays for the retransmission with grant credit;
/// the receiver, seeing that paid copy, counts it as a retransmission it granted for, so
/// the last packet still gets credit. Before, the receiver treated the copy as a plain
/// duplicate: the grant stopped one packet short (the whole message, 10 packets, had been
/// granted, but the sender had spent one packet of it twice) and packet 9 waited for the
/// receiver's 1 ms RESEND timeout.
#[test]
fn aeolus_retransmission_paid_for_a_packet_the_receiver_holds_is_granted_again() {
    let fl = flows(&[(0, 1, 10 * MSS)]);
    let mut h = homa(json!({"aeolus": true, "unsched_prios": 2}));
    let sent = start_and_drain(&mut h, &fl, 6);
    assert_eq!(sent.len(), 7, "six unscheduled packets and the probe");
    // Receiver (t = 5..10 us): all six unscheduled packets, then the probe (11 us).
    let mut to_sender = Vec::new();
    for i in 0..6u64 {
        let a = call(1, Time::us(5 + i), &fl, |c| h.on_packet(c, &data(&fl[0], i, true)));
        to_sender.extend(a.sends.iter().copied());
    }
    let mut pr = sent[6];
    pr.src = 0;
    to_sender.extend(call(1, Time::us(11), &fl, |c| h.on_packet(c, &pr)).sends.iter().copied());
    // received 6 packets + rtt_bytes, capped at the length: the whole message is granted.
    assert_eq!(h.receiver_granted(0), Some(10 * MSS));
    // Sender (12 us): every reply but the ACK of packet 5 arrives; the probe's ACK makes
    // the sender declare packet 5 lost.
    h.hosts[0].nic_busy = true;
    for p in to_sender.iter().filter(|p| !(p.kind == KIND_UACK && p.seq == 5 * MSS)) {
        let mut p = *p;
        p.src = 1;
        call(0, Time::us(12), &fl, |c| h.on_packet(c, &p));
    }
    let d = drain(&mut h, &fl, 0, Time::us(13), 6);
    let order: Vec<(u64, bool)> = d.iter().map(|p| (p.seq / MSS, p.aux2 & DATA_CHARGED != 0)).collect();
    // Credit 10 x 1460 B minus the 8760 B burst: the paid retransmission of 5, then 6-8.
    assert_eq!(order, vec![(5, true), (6, false), (7, false), (8, false)]);
    // Receiver (20-23 us): the paid copy of 5 raises the grant by one packet.
    let mut to_sender = Vec::new();
    for (k, p) in d.iter().enumerate() {
        let mut p = *p;
        p.src = 0;
        let a = call(1, Time::us(20 + k as u64), &fl, |c| h.on_packet(c, &p));
        to_sender.extend(a.sends.iter().copied());
    }
    assert_eq!(h.receiver_granted(0), Some(11 * MSS), "length + the packet paid twice");
    let g = to_sender.iter().filter(|p| p.kind == KIND_GRANT).map(|p| p.seq).max();
    assert_eq!(g, Some(11 * MSS));
    // Sender (25 us): the grant lets packet 9 go; it completes the message at 30 us.
    h.hosts[0].nic_busy = true;
    for p in &to_sender {
        let mut p = *p;
        p.src = 1;
        call(0, Time::us(25), &fl, |c| h.on_packet(c, &p));
    }
    let d = drain(&mut h, &fl, 0, Time::us(26), 3);
    assert_eq!(d.iter().map(|p| p.seq / MSS).collect::<Vec<_>>(), vec![9]);
    let mut last = d[0];
    last.src = 0;
    let a = call(1, Time::us(30), &fl, |c| h.on_packet(c, &last));
    assert_eq!(a.completions, vec![0]);
    assert_eq!(h.flow_stats(0), FlowStats { retx_bytes: MSS, timeouts: 0, ..FlowStats::default() });
}

/// The receiver timer of flow `f` among `a`'s timers, if one was armed.
fn recv_timer(a: &Actions, f: FlowId) -> Option<(Time, u64)> {
    a.timers.iter().copied().find(|&(_, tok)| {
        let (g, kind, _) = untoken(tok);
        g == f && kind == TIMER_RECV
    })
}

/// Homa + Aeolus, the hang of repro/ppt_fig23_incast: a 4,200 B message with
/// rtt_bytes 4,000 B is all unscheduled (3 packets, 4,380 B of payload room > rtt_bytes),
/// all three are dropped, the probe declares them lost and the receiver grants
/// min(length + lost, received + lost + rtt_bytes) = 8,200 B, short of unscheduled +
/// lost = 8,400 B. The sender still resends all three (a whole packet goes while it has
/// charged less than the grant), and those scheduled copies are lost too. Nothing the
/// receiver expects arrives for resend_timeout: it must ask for the three packets
/// (before the fix it waited for "credit" it had in fact given, forever).
#[test]
fn fully_unscheduled_message_whose_aeolus_retransmissions_are_lost_completes_via_resend() {
    let fl = flows(&[(0, 1, 4200)]);
    let mut h = homa(json!({"aeolus": true, "rtt_bytes": "4000B", "resend_timeout": "100us"}));
    assert_eq!((h.params().unsched_packets(4200), h.params().unsched_bytes(4200)), (3, 4200));
    let sent = start_and_drain(&mut h, &fl, 3);
    let k: Vec<(u8, u64)> = sent.iter().map(|p| (p.kind, p.seq / MSS)).collect();
    assert_eq!(k, vec![(KIND_DATA, 0), (KIND_DATA, 1), (KIND_DATA, 2), (KIND_PROBE, 2)]);
    // The three data packets are dropped; the probe arrives at 5 us.
    let mut probe = sent[3];
    probe.src = 0;
    let a = call(1, Time::us(5), &fl, |c| h.on_packet(c, &probe));
    let (at, tok) = recv_timer(&a, 0).expect("receiver timer armed when it learns the message");
    assert_eq!(at, Time::us(105));
    let grant = kinds(&a, KIND_GRANT);
    assert_eq!(grant.len(), 1);
    assert_eq!(grant[0].seq, 8200, "received 0 + lost 4200 + rtt_bytes 4000");
    // The sender learns the losses and resends all three as scheduled packets.
    h.hosts[0].nic_busy = true;
    for p in a.sends.iter() {
        let mut p = *p;
        p.src = 1;
        call(0, Time::us(8), &fl, |c| h.on_packet(c, &p));
    }
    let retx: Vec<Packet> = drain(&mut h, &fl, 0, Time::us(9), 5).into_iter().filter(|p| p.kind == KIND_DATA).collect();
    assert_eq!(retx.iter().map(|p| p.seq / MSS).collect::<Vec<_>>(), vec![0, 1, 2]);
    assert!(retx.iter().all(|p| p.aux2 & DATA_RETX != 0 && !p.flags.has(PacketFlags::UNSCHEDULED)));
    assert_eq!(h.receiver_outstanding(1), 4000, "8200 granted - 0 received - 4200 lost");
    // They are dropped too. The message waited for grants until the probe's grant at
    // 5 us; its clock starts when the receiver's link could have delivered the 4,000 B it
    // asked for (3.2 us at 10 Gbps): at 105 us the timer re-arms for 108.2 us, when
    // nothing the receiver expected has come for resend_timeout.
    let a = call(1, at, &fl, |c| h.on_timer(c, tok));
    assert!(a.sends.is_empty());
    let (at, tok) = recv_timer(&a, 0).unwrap();
    assert_eq!(at, Time::us(105) + Rate::gbps(10).tx_time(Bytes(4000)));
    let a = call(1, at, &fl, |c| h.on_timer(c, tok));
    let r = kinds(&a, KIND_RESEND);
    assert_eq!(r.iter().map(|q| (q.seq, q.ack)).collect::<Vec<_>>(), vec![(0, 4200)], "RESEND of all three");
    // The sender answers with the three packets (no second Aeolus copy pending); the
    // message completes.
    let mut q = r[0];
    q.src = 1;
    h.hosts[0].nic_busy = true;
    call(0, Time::us(108), &fl, |c| h.on_packet(c, &q));
    let again: Vec<Packet> =
        drain(&mut h, &fl, 0, Time::us(109), 6).into_iter().filter(|p| p.kind == KIND_DATA).collect();
    assert_eq!(
        again.iter().map(|p| (p.seq / MSS, p.aux2 & DATA_RESEND)).collect::<Vec<_>>(),
        vec![(0, DATA_RESEND), (1, DATA_RESEND), (2, DATA_RESEND)]
    );
    let mut done = Vec::new();
    for p in &again {
        done.extend(call(1, Time::us(112), &fl, |c| h.on_packet(c, p)).completions);
    }
    assert_eq!(done, vec![0]);
    assert_eq!(h.flow_stats(0), FlowStats { retx_bytes: 2 * 4200, timeouts: 1, ..FlowStats::default() });
}

/// Homa's RESEND rule (HomaModule: "we've received everything that we've granted, so we
/// shouldn't expect to hear anything until we grant more"): with overcommitment 1, a
/// 40-packet message (flow 1) that got all its 6 unscheduled packets waits while a
/// 30-packet one (flow 0) is granted. Its timer fires at 106 and 206 us: no RESEND (it
/// waits for grants). At 250 us flow 0's remaining packets arrive; once it is fully
/// granted (4 packets still to come) flow 1 is granted. Its clock starts at that grant
/// plus the time the receiver's link needs for what the receiver now expects (flow 0's
/// 4 packets and flow 1's 8,128 B: 11.2 us at 10 Gbps), so the timer at 306 us (56 us
/// later) sends nothing and the first RESEND goes at 361.2 us, for exactly the granted
/// packets that did not come.
#[test]
fn no_resend_while_waiting_for_grants_and_the_clock_starts_when_granted_data_can_arrive() {
    let fl = flows(&[(0, 3, 30 * MSS), (1, 3, 40 * MSS)]);
    let mut h = homa(json!({"overcommitment": 1, "resend_timeout": "100us"}));
    let mut timer = None;
    for f in &fl {
        for i in 0..6 {
            let a = call(3, Time::us(5 + f.id as u64), &fl, |c| h.on_packet(c, &data(f, i, true)));
            if f.id == 1 {
                assert!(kinds(&a, KIND_GRANT).iter().all(|g| g.flow == 0), "only the shorter one is granted");
                timer = recv_timer(&a, 1).or(timer);
            }
        }
    }
    let (mut at, mut tok) = timer.unwrap();
    assert_eq!(at, Time::us(106));
    let fire = |h: &mut Homa, now: Time, tok: u64| {
        let a = call(3, now, &fl, |c| h.on_timer(c, tok));
        (kinds(&a, KIND_RESEND), recv_timer(&a, 1).unwrap())
    };
    for expect in [Time::us(206), Time::us(306)] {
        let (r, next) = fire(&mut h, at, tok);
        assert!(r.is_empty(), "waiting for grants at {at}: {r:?}");
        (at, tok) = next;
        assert_eq!(at, expect);
    }
    // Flow 0's remaining packets arrive at 250 us; once it is fully granted the grants go
    // to flow 1.
    let mut g1 = Vec::new();
    for i in 6..30 {
        let a = call(3, Time::us(250), &fl, |c| h.on_packet(c, &data(&fl[0], i, false)));
        g1.extend(kinds(&a, KIND_GRANT).into_iter().filter(|g| g.flow == 1));
    }
    assert_eq!(g1.iter().map(|g| g.seq).collect::<Vec<_>>(), vec![6 * MSS + 8128]);
    // 306 us: granted 56 us ago, nothing sent; re-armed for 361.2 us.
    let (r, next) = fire(&mut h, at, tok);
    assert!(r.is_empty(), "granted only 56 us ago: {r:?}");
    assert_eq!(next.0, Time::us(350) + Rate::gbps(10).tx_time(Bytes(4 * MSS + 8128)));
    let (r, _) = fire(&mut h, next.0, next.1);
    assert_eq!(r.iter().map(|q| (q.seq / MSS, q.ack)).collect::<Vec<_>>(), vec![(6, 6 * MSS)]);
}

/// The grant set changes under a message's last packets (the second cause of spurious
/// RESENDs): flow 0 (A, 20 packets) is granted alone, so in the lowest scheduled class
/// (7); after its 15th packet it is fully granted, its last 5 packets on the way in
/// class 7. Then flows 1 (B, 60 packets) and 2 (C, 80) arrive and B's next GRANT puts
/// it in class 6: B, with 58 packets left, now outranks A's tail (5 left) at the
/// receiver's downlink for as long as B keeps packets queued. This holds whether A keeps
/// its rank until received (HomaModule) or not: a packet's class is fixed when it is
/// sent. What differs is the class A's RESEND asks for when A's timer fires: without
/// `rank_until_received` A left the ranking and its class is still 7 (the copy starves
/// behind B like the original); with it A ranks first (class 5, above B); with
/// `resend_class = "highest"` class 0.
#[test]
fn fully_granted_message_tail_is_outranked_by_a_longer_message_granted_later() {
    let fl = flows(&[(0, 3, 20 * MSS), (1, 3, 60 * MSS), (2, 3, 80 * MSS)]);
    let base = json!({"unsched_prios": 2, "resend_timeout": "100us"});
    for (cfg, resend_class) in [
        (json!({"rank_until_received": false}), 7u32),
        (json!({"rank_until_received": true}), 5),
        (json!({"rank_until_received": false, "resend_class": "highest"}), 0),
    ] {
        let mut all = base.clone();
        all.as_object_mut().unwrap().extend(cfg.as_object().unwrap().clone());
        let mut h = homa(all);
        let mut a_grants = Vec::new();
        let mut timer = None;
        for i in 0..15 {
            let a = call(3, Time::us(5), &fl, |c| h.on_packet(c, &data(&fl[0], i, i < 6)));
            a_grants.extend(kinds(&a, KIND_GRANT).iter().map(|g| (g.seq, g.rank)));
            timer = recv_timer(&a, 0).or(timer);
        }
        assert_eq!(a_grants.last(), Some(&(20 * MSS, 7)), "{cfg}: A fully granted, alone, class 7");
        let mut b_grants = Vec::new();
        for (f, i) in [(1usize, 0u64), (2, 0), (1, 1)] {
            let a = call(3, Time::us(6), &fl, |c| h.on_packet(c, &data(&fl[f], i, true)));
            assert!(kinds(&a, KIND_GRANT).iter().all(|g| g.flow != 0), "A needs no grant");
            b_grants.extend(kinds(&a, KIND_GRANT).iter().filter(|g| g.flow == 1).map(|g| g.rank));
        }
        assert_eq!(b_grants.last(), Some(&6), "{cfg}: B (58 packets left) above A's tail (5 left)");
        let (at, tok) = timer.unwrap();
        let a = call(3, at, &fl, |c| h.on_timer(c, tok));
        let r = kinds(&a, KIND_RESEND);
        assert_eq!((r.len(), r[0].seq / MSS, r[0].ack), (1, 15, 5 * MSS), "{cfg}");
        assert_eq!(r[0].rank, resend_class, "{cfg}: the class A's RESEND asks for");
    }
}

/// Homa's own packets through a per-port selective-dropping switch port (Aeolus §VI):
/// Homa's unscheduled packets ride a higher class than its scheduled ones, so only the
/// port-wide occupancy protects the scheduled backlog. With 7.5 KB of scheduled data
/// waiting, an unscheduled Homa packet is dropped while a further scheduled one queues.
#[test]
fn homa_unscheduled_packet_dropped_above_threshold_scheduled_queued() {
    let fl = flows(&[(0, 2, 40 * MSS), (1, 2, 2 * MSS)]);
    let mut h = homa(json!({"aeolus": true, "unsched_prios": 2}));
    // Flow 0 gets a big grant and sends scheduled packets (class from the grant).
    call(0, Time::ZERO, &fl, |c| h.start_flow(c, 0));
    drain(&mut h, &fl, 0, Time::ns(100), 5);
    let g = Packet { src: 2, dst: 0, flow: 0, kind: KIND_GRANT, seq: 20 * MSS, rank: 7, ..Packet::default() };
    let mut sched = kinds(&call(0, Time::us(7), &fl, |c| h.on_packet(c, &g)), KIND_DATA);
    sched.extend(drain(&mut h, &fl, 0, Time::us(8), 6).into_iter().filter(|p| p.kind == KIND_DATA));
    assert_eq!(sched.len(), 6);
    assert!(sched.iter().all(|p| !p.flags.has(PacketFlags::UNSCHEDULED) && p.prio == 7));
    // Flow 1's first packet: unscheduled, class 0 (small message).
    let a = call(1, Time::ZERO, &fl, |c| h.start_flow(c, 1));
    let u = kinds(&a, KIND_DATA)[0];
    assert!(u.flags.has(PacketFlags::UNSCHEDULED));
    assert_eq!(u.prio, 0);
    let cfg = SelectiveDropConfig { threshold: Bytes(6_000), per_port: true };
    let mut q = SelectiveDrop::new(Bytes(200_000), 8, &cfg, &[], false);
    let mut arena = PacketArena::new();
    let mut fx = PortEffects::default();
    for p in &sched[..5] {
        let i = arena.alloc(*p);
        q.enqueue(Time::ZERO, i, &mut arena, &mut fx);
    }
    assert!(fx.drops.is_empty());
    let ui = arena.alloc(u);
    q.enqueue(Time::ZERO, ui, &mut arena, &mut fx);
    assert_eq!(fx.drops, vec![(ui, DROP_SELECTIVE)]);
    let si = arena.alloc(sched[5]);
    q.enqueue(Time::ZERO, si, &mut arena, &mut fx);
    assert_eq!(fx.drops.len(), 1, "the scheduled packet is queued");
    assert_eq!(q.bytes(), Bytes(6 * 1500));
}

#[test]
fn low_priority_mode_puts_unscheduled_packets_below_scheduled_ones() {
    let h = homa(json!({"aeolus": true, "aeolus_mode": "low_priority", "unsched_prios": 2}));
    let p = h.params();
    assert_eq!(p.unsched_prio(100), 7);
    assert_eq!(p.unsched_prio(10_000_000), 7);
    // Six scheduled levels just above: classes 1..=6.
    assert_eq!((p.sched_prio(0, 6), p.sched_prio(5, 6), p.sched_prio(0, 1)), (1, 6, 6));
}

/// Idealised first RTT (`aeolus_mode = "low_priority"`, `aeolus_probe_class =
/// "control"`): on flow start the unscheduled burst rides the lowest class and the probe
/// that follows it rides class 0, the control class.
#[test]
fn control_probe_on_flow_start_rides_class_0_behind_a_lowest_class_burst() {
    let fl = flows(&[(0, 1, 3 * MSS)]);
    let cfg =
        json!({"aeolus": true, "aeolus_mode": "low_priority", "aeolus_probe_class": "control", "unsched_prios": 2});
    let mut h = homa(cfg);
    let sent = start_and_drain(&mut h, &fl, 4);
    let got: Vec<(u8, u64, u8)> = sent.iter().map(|p| (p.kind, p.seq / MSS, p.prio)).collect();
    assert_eq!(got, vec![(KIND_DATA, 0, 7), (KIND_DATA, 1, 7), (KIND_DATA, 2, 7), (KIND_PROBE, 2, 0)]);
    // The default keeps the probe behind the burst, in the lowest class.
    let mut h = homa(json!({"aeolus": true, "aeolus_mode": "low_priority", "unsched_prios": 2}));
    let sent = start_and_drain(&mut h, &fl, 4);
    assert_eq!((sent[3].kind, sent[3].prio), (KIND_PROBE, 7));
}

/// Idealised first RTT: the control-class probe arrives while unscheduled packets 1 and
/// 2 still wait in a switch's lowest class (no spare capacity). The receiver declares
/// them lost and grants them; the sender resends them as scheduled packets in the
/// granted class, above the lowest class, without any timeout. The waiting originals,
/// arriving later, are duplicates and do not complete the message twice.
#[test]
fn control_probe_on_overtaking_waiting_unscheduled_packets_gets_them_resent_as_scheduled() {
    let fl = flows(&[(0, 1, 3 * MSS)]);
    let cfg =
        json!({"aeolus": true, "aeolus_mode": "low_priority", "aeolus_probe_class": "control", "unsched_prios": 2});
    let mut h = homa(cfg);
    let sent = start_and_drain(&mut h, &fl, 4);
    let mut probe = sent[3];
    probe.src = 0;
    // Receiver: packet 0, then the probe (packets 1 and 2 are still queued).
    let mut to_sender = Vec::new();
    let a = call(1, Time::us(2), &fl, |c| h.on_packet(c, &data(&fl[0], 0, true)));
    to_sender.extend(a.sends.iter().copied());
    let a = call(1, Time::us(3), &fl, |c| h.on_packet(c, &probe));
    to_sender.extend(a.sends.iter().copied());
    assert!(a.completions.is_empty());
    let grant = to_sender.iter().rev().find(|p| p.kind == KIND_GRANT).expect("the probe's losses are granted");
    assert!(grant.seq >= 3 * MSS, "the whole message is granted: {}", grant.seq);
    assert!((grant.rank as u8) < 7, "scheduled class above the lowest: {}", grant.rank);
    // Sender: the feedback arrives; the two packets go again, as scheduled ones.
    h.hosts[0].nic_busy = true;
    let mut out = Vec::new();
    for p in &to_sender {
        let mut p = *p;
        p.src = 1;
        out.extend(call(0, Time::us(5), &fl, |c| h.on_packet(c, &p)).sends.iter().copied());
    }
    out.extend(drain(&mut h, &fl, 0, Time::us(6), 4));
    let d: Vec<(u64, u8, bool)> = out
        .iter()
        .filter(|p| p.kind == KIND_DATA)
        .map(|p| (p.seq / MSS, p.prio, p.flags.has(PacketFlags::UNSCHEDULED)))
        .collect();
    let g = grant.rank as u8;
    assert_eq!(d, vec![(1, g, false), (2, g, false)]);
    assert_eq!(h.flow_stats(0).timeouts, 0);
    // Receiver: the resent copies complete the message; the late originals change nothing.
    let mut done = 0;
    for i in [1u64, 2] {
        let mut pk = data(&fl[0], i, false);
        pk.prio = g;
        pk.aux2 = DATA_RETX | DATA_CHARGED;
        done += call(1, Time::us(7 + i), &fl, |c| h.on_packet(c, &pk)).completions.len();
    }
    assert_eq!(done, 1);
    for i in [1u64, 2] {
        let a = call(1, Time::us(20 + i), &fl, |c| h.on_packet(c, &data(&fl[0], i, true)));
        assert!(a.completions.is_empty());
    }
}

#[test]
fn config_errors_name_the_field() {
    let cases = [
        (json!({"rtt_bytes": 0}), "transport.rtt_bytes"),
        (json!({"overcommitment": 0}), "transport.overcommitment"),
        (json!({"unsched_prios": 0}), "transport.unsched_prios"),
        (json!({"unsched_prios": 8}), "transport.unsched_prios"),
        (json!({"unsched_prios": 4, "sched_prios": 5}), "transport.sched_prios"),
        (json!({"unsched_prios": 3, "unsched_cutoffs": ["5KB"]}), "transport.unsched_cutoffs"),
        (json!({"unsched_prios": 3, "unsched_cutoffs": ["5KB", "2KB"]}), "transport.unsched_cutoffs"),
        (json!({"resend_timeout": 0}), "transport.resend_timeout"),
        (json!({"resend_timeout": "soon"}), "transport.resend_timeout"),
        (json!({"sender_timeout": 0}), "transport.sender_timeout"),
        (json!({"resend_ranges": "some"}), "transport.resend_ranges"),
        (json!({"resend_per_peer": "one"}), "transport.resend_per_peer"),
        (json!({"resend_per_peer": -1}), "transport.resend_per_peer"),
        (json!({"aeolus_mode": "fancy"}), "transport.aeolus_mode"),
        (json!({"aeolus_probe_class": "fancy"}), "transport.aeolus_probe_class"),
        (json!({"aeolus": true, "aeolus_probe_class": "control"}), "transport.aeolus_probe_class"),
        (
            json!({"aeolus": true, "aeolus_mode": "low_priority", "aeolus_probe": false, "aeolus_probe_class": "control"}),
            "transport.aeolus_probe_class",
        ),
        (json!({"aeolus": "yes"}), "transport.aeolus"),
        (json!({"grants": 3}), "transport.grants"),
    ];
    for (cfg, field) in cases {
        let e = Homa::from_config(&cfg, &net()).err().unwrap_or_else(|| panic!("{cfg} accepted"));
        assert_eq!(e.field(), field, "{cfg}: {e}");
        assert!(e.to_string().contains(field), "{e}");
    }
    let mut tiny = net();
    tiny.mtu = Bytes(40);
    assert_eq!(Homa::from_config(&serde_json::Value::Null, &tiny).err().unwrap().field(), "network.mtu");
    let mut one = net();
    one.priorities = 1;
    let p = Homa::from_config(&serde_json::Value::Null, &one).unwrap().params().clone();
    assert_eq!((p.unsched_prio(100), p.sched_prio(0, 3), p.sched_prio(2, 3)), (0, 0, 0));
    let p = Homa::from_config(&json!({"unsched_prios": 3, "unsched_cutoffs": ["1000B", "5KB"]}), &net()).unwrap();
    assert_eq!(p.params().cutoffs, vec![1000, 5000]);
    for (v, n) in [(json!(true), 1), (json!(false), 0), (json!(3), 3), (json!(0), 0)] {
        let p = Homa::from_config(&json!({ "resend_per_peer": v }), &net()).unwrap();
        assert_eq!(p.params().resend_per_peer, n, "{v}");
    }
    let p = Homa::from_config(&json!({"resend_ranges": "all"}), &net()).unwrap();
    assert_eq!(p.params().resend_ranges, ResendRanges::All);
}

/// Flows of 3 packets (all unscheduled), each from `src`, to host 3; packets 0 and 2 of
/// each arrive at 5 us, packet 1 never does. Returns each flow's receiver timer.
fn stall_three_packet_messages(h: &mut Homa, fl: &[FlowInfo]) -> Vec<(Time, u64)> {
    let mut timers = Vec::new();
    for f in fl {
        let a = call(3, Time::us(5), fl, |c| h.on_packet(c, &data(f, 0, true)));
        timers.push(recv_timer(&a, f.id).expect("timer armed when the message is learned"));
        let a = call(3, Time::us(5), fl, |c| h.on_packet(c, &data(f, 2, true)));
        assert!(a.sends.is_empty());
    }
    timers
}

/// The RESENDs (flow, first packet, packets) in `a`.
fn resends(a: &Actions) -> Vec<(FlowId, u64, u64)> {
    kinds(a, KIND_RESEND).iter().map(|q| (q.flow, q.seq / MSS, q.ack.div_ceil(MSS))).collect()
}

/// Per-peer limit 1 (`resend_per_peer = true`): flows 0 and 1 from host 0 and flow 2 from host 1 all
/// stall with packet 1 missing; their timers expire together at 105 us. Host 0 gets one
/// RESEND (flow 0, the older), host 1 its own (flow 2); flow 1's timer waits for the
/// slot (re-armed at 205 us, when flow 0's RESEND stops counting). Host 0 answers BUSY
/// for flow 0 at 110 us: the slot is free, flow 1's RESEND goes out at once. Without the
/// limit (`resend_per_peer = false`) all three go out at 105 us.
#[test]
fn two_stalled_messages_from_one_peer_get_one_outstanding_resend_the_other_after_the_answer() {
    let fl = flows(&[(0, 3, 3 * MSS), (0, 3, 3 * MSS), (1, 3, 3 * MSS)]);
    let mut h = homa(json!({"resend_timeout": "100us", "resend_per_peer": true}));
    let timers = stall_three_packet_messages(&mut h, &fl);
    assert!(timers.iter().all(|t| t.0 == Time::us(105)));
    let mut sent = Vec::new();
    let mut rearmed = Vec::new();
    for (f, &(at, tok)) in timers.iter().enumerate() {
        let a = call(3, at, &fl, |c| h.on_timer(c, tok));
        sent.extend(resends(&a));
        rearmed.push(recv_timer(&a, f as FlowId).unwrap().0);
    }
    assert_eq!(sent, vec![(0, 1, 1), (2, 1, 1)], "one RESEND per sending host");
    assert_eq!(rearmed, vec![Time::us(205); 3]);
    let busy = Packet { src: 0, dst: 3, flow: 0, kind: KIND_BUSY, ..Packet::default() };
    let a = call(3, Time::us(110), &fl, |c| h.on_packet(c, &busy));
    assert_eq!(resends(&a), vec![(1, 1, 1)], "the answer frees the slot for flow 1");
    assert_eq!(recv_timer(&a, 1).unwrap().0, Time::us(210));

    let mut h = homa(json!({"resend_timeout": "100us", "resend_per_peer": false}));
    let timers = stall_three_packet_messages(&mut h, &fl);
    let mut sent = Vec::new();
    for &(at, tok) in &timers {
        sent.extend(resends(&call(3, at, &fl, |c| h.on_timer(c, tok))));
    }
    assert_eq!(sent, vec![(0, 1, 1), (1, 1, 1), (2, 1, 1)], "no limit: one RESEND per message");
}

/// An 8-packet message (all unscheduled with rtt_bytes 20,000 B) gets packets 0, 2, 3,
/// 5 and 7: packets 1, 4 and 6 are missing, three ranges. With `resend_ranges = "first"`
/// the RESEND names only the first range; with `"all"` (the default) one RESEND per range.
#[test]
fn stalled_message_with_three_missing_ranges_resend_names_only_the_first() {
    let fl = flows(&[(0, 3, 8 * MSS)]);
    for (ranges, expect) in [("first", vec![(0, 1, 1)]), ("all", vec![(0, 1, 1), (0, 4, 1), (0, 6, 1)])] {
        let mut h = homa(json!({"resend_timeout": "100us", "rtt_bytes": "20000B", "resend_ranges": ranges}));
        let mut timer = None;
        for i in [0, 2, 3, 5, 7] {
            let a = call(3, Time::us(5), &fl, |c| h.on_packet(c, &data(&fl[0], i, true)));
            timer = recv_timer(&a, 0).or(timer);
        }
        let (at, tok) = timer.unwrap();
        let a = call(3, at, &fl, |c| h.on_timer(c, tok));
        assert_eq!(resends(&a), expect, "resend_ranges = {ranges}");
    }
}

/// Three stalled messages from one sending host, no RESEND ever answered (the sender
/// is gone, or they are all lost): each slot expiry hands the single RESEND to the
/// message asked least recently, so they take turns 0, 1, 2, 0, 1, one every
/// `resend_timeout`, whichever message's timer fires.
#[test]
fn stalled_messages_of_one_peer_take_turns_for_its_resend_slot() {
    let fl = flows(&[(0, 3, 3 * MSS), (0, 3, 3 * MSS), (0, 3, 3 * MSS)]);
    let mut h = homa(json!({"resend_timeout": "100us", "resend_per_peer": 1}));
    // Pending timer events; a re-armed timer leaves its old event stale (ignored).
    let mut events = stall_three_packet_messages(&mut h, &fl);
    let mut turns = Vec::new();
    while turns.len() < 5 {
        events.sort_by_key(|e| std::cmp::Reverse(e.0));
        let (at, tok) = events.pop().unwrap();
        let a = call(3, at, &fl, |c| h.on_timer(c, tok));
        for (f, _, _) in resends(&a) {
            turns.push((f, at));
        }
        events.extend(a.timers.iter().copied());
    }
    let t = |us| Time::us(us);
    assert_eq!(turns, vec![(0, t(105)), (1, t(205)), (2, t(305)), (0, t(405)), (1, t(505))]);
}

/// The no-progress clock counts from the last event that showed the message alive: new
/// data at 60 us moves the first RESEND from 105 us to 160 us; the sender's BUSY at
/// 170 us (it is busy with shorter messages) restarts it again, so the next RESEND goes
/// at 270 us, not one timeout after the first (260 us).
#[test]
fn stalled_message_clock_restarts_at_new_data_and_at_busy() {
    let fl = flows(&[(0, 3, 4 * MSS)]);
    let mut h = homa(json!({"resend_timeout": "100us", "resend_ranges": "first", "resend_per_peer": true}));
    let a = call(3, Time::us(5), &fl, |c| h.on_packet(c, &data(&fl[0], 0, true)));
    let (at, tok) = recv_timer(&a, 0).unwrap();
    assert!(call(3, Time::us(60), &fl, |c| h.on_packet(c, &data(&fl[0], 2, true))).sends.is_empty());
    let a = call(3, at, &fl, |c| h.on_timer(c, tok));
    assert!(a.sends.is_empty());
    let (at, tok) = recv_timer(&a, 0).unwrap();
    assert_eq!(at, Time::us(160));
    let a = call(3, at, &fl, |c| h.on_timer(c, tok));
    assert_eq!(resends(&a), vec![(0, 1, 1)]);
    let (at, tok) = recv_timer(&a, 0).unwrap();
    assert_eq!(at, Time::us(260));
    let busy = Packet { src: 0, dst: 3, flow: 0, kind: KIND_BUSY, ..Packet::default() };
    call(3, Time::us(170), &fl, |c| h.on_packet(c, &busy));
    let a = call(3, at, &fl, |c| h.on_timer(c, tok));
    assert!(a.sends.is_empty(), "BUSY at 170 us: not yet");
    let (at, tok) = recv_timer(&a, 0).unwrap();
    assert_eq!(at, Time::us(270));
    assert_eq!(resends(&call(3, at, &fl, |c| h.on_timer(c, tok))), vec![(0, 1, 1)]);
}

/// What one run of [`trickle`] saw: data packets delivered per 10 us round, the receiver's
/// granted-but-not-received bytes after each round, the RESENDs (first packet, packets)
/// with the time the receiver sent them, and when the message completed.
struct Trickle {
    per_round: Vec<usize>,
    outstanding: Vec<u64>,
    resends: Vec<(Time, u64, u64)>,
    done: Option<Time>,
}

/// A 150-packet message (host 0 to host 1, rtt_bytes 8,128 B: 6 unscheduled packets,
/// `resend_timeout` 100 us) whose unscheduled packets `lost` are dropped. Every 10 us the
/// packets sent in the previous round arrive; the receiver's GRANTs go straight back and
/// the sender sends what they allow. The receiver's timer is fired when due.
fn trickle(lost: &[u64]) -> Trickle {
    let fl = flows(&[(0, 1, 150 * MSS)]);
    let mut h = homa(json!({"resend_timeout": "100us"}));
    assert_eq!(h.params().rtt_bytes, 8128);
    let a = call(0, Time::ZERO, &fl, |c| h.start_flow(c, 0));
    let mut flight = kinds(&a, KIND_DATA);
    flight.extend(drain(&mut h, &fl, 0, Time::ns(1200), 10));
    assert_eq!(flight.len(), 6, "the unscheduled packets");
    flight.retain(|p| !lost.contains(&(p.seq / MSS)));
    let mut out = Trickle { per_round: Vec::new(), outstanding: Vec::new(), resends: Vec::new(), done: None };
    let mut timer: Option<(Time, u64)> = None;
    let mut t = Time::us(5);
    while out.done.is_none() && t < Time::ms(2) {
        while let Some((at, tok)) = timer.filter(|x| x.0 <= t) {
            let a = call(1, at, &fl, |c| h.on_timer(c, tok));
            for r in kinds(&a, KIND_RESEND) {
                out.resends.push((at, r.seq / MSS, r.ack.div_ceil(MSS)));
                let mut r = r;
                r.src = 1;
                let b = call(0, at, &fl, |c| h.on_packet(c, &r));
                flight.extend(kinds(&b, KIND_DATA));
                flight.extend(drain(&mut h, &fl, 0, at, 10));
            }
            timer = recv_timer(&a, 0);
        }
        out.per_round.push(flight.len());
        let mut grants = Vec::new();
        for p in std::mem::take(&mut flight) {
            let a = call(1, t, &fl, |c| h.on_packet(c, &p));
            timer = recv_timer(&a, 0).or(timer);
            if !a.completions.is_empty() {
                out.done = Some(t);
            }
            grants.extend(kinds(&a, KIND_GRANT));
        }
        out.outstanding.push(h.receiver_outstanding(1));
        for g in grants {
            let a = call(0, t, &fl, |c| h.on_packet(c, &g));
            flight.extend(kinds(&a, KIND_DATA));
        }
        flight.extend(drain(&mut h, &fl, 0, t, 10));
        t += Time::us(10);
    }
    out
}

/// Homa's loss recovery as its implementation and protocol description define it (the
/// mechanism of Homa's low utilization in repro/rpo_fig12_multibottleneck and
/// repro/rpo_fig1c_rtt, see "A lost packet keeps its share of the window"): the receiver
/// grants bytes received + `rtt_bytes`, so a lost packet counts as on its way until it is
/// resent, and the RESEND comes only after `resend_timeout` with no new data. State: a
/// 150-packet message lost unscheduled packets 1-3 (4,380 B of its 8,128 B window).
/// Event: its other packets keep arriving every 10 us. The sender may have only 8,128 -
/// 4,380 = 3,748 B in flight (3 whole packets; 6 without the loss), the receiver's
/// granted-not-received bytes stay at the whole 8,128 B, and the 100 us timer never runs
/// out while packets arrive (about 470 us here: no RESEND). When the last new packet has
/// arrived the message falls silent and exactly one timeout later the receiver asks for
/// packets 1-3, which complete it.
#[test]
fn lost_packets_hold_part_of_the_window_and_get_no_resend_while_later_packets_arrive() {
    let whole = trickle(&[]);
    let hit = trickle(&[1, 2, 3]);
    // Steady state (rounds 3..40): 6 packets per round without the loss, 3 with it.
    assert!(whole.per_round[3..20].iter().all(|&n| n == 6), "{:?}", whole.per_round);
    assert!(hit.per_round[3..40].iter().all(|&n| n == 3), "{:?}", hit.per_round);
    assert!(hit.outstanding[3..40].iter().all(|&b| b == 8128), "{:?}", hit.outstanding);
    assert!(whole.resends.is_empty() && hit.resends.len() == 1, "{:?}", hit.resends);
    // The last new packets arrive at `last`; the RESEND goes one timeout later, for 1-3.
    let rounds = hit.per_round.iter().position(|&n| n == 0).expect("the sender runs out of new data");
    let last = Time::us(5 + 10 * (rounds as u64 - 1));
    assert!(last > Time::us(400), "packets arrived for over four timeouts: {last}");
    assert_eq!(hit.resends[0], (last + Time::us(100), 1, 3));
    // (This test's network delivers a round's packets at once, the retransmissions too.)
    assert_eq!(hit.done, Some(last + Time::us(100)), "{:?}", hit.per_round);
    assert!(whole.done.is_some_and(|d| d < Time::us(300)), "{:?}", whole.done);
}
