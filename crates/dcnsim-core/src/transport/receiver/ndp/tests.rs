//! State-machine tests of NDP: each names the state and the event it drives.

use super::*;
use crate::units::Bytes;
use serde_json::json;

fn net() -> NetInfo {
    NetInfo::for_tests(9000, Time::us(10), Rate::gbps(100))
}

fn flow(id: FlowId, src: NodeId, dst: NodeId, size: u64) -> FlowInfo {
    FlowInfo {
        id,
        src,
        dst,
        size: Bytes(size),
        start: Time::ZERO,
        base_rtt: Time::us(10),
        path_rate: Rate::gbps(100),
        host_rate: Rate::gbps(100),
        deadline: None,
        background: false,
    }
}

const MSS: u64 = 8960;

fn call<F: FnOnce(&mut Ndp, &mut Ctx)>(n: &mut Ndp, flows: &[FlowInfo], now: Time, host: NodeId, f: F) -> Actions {
    let mut out = Actions::new();
    let mut ctx = Ctx { now, host, flows, out: &mut out };
    f(n, &mut ctx);
    out
}

fn kinds(a: &Actions, kind: u8) -> Vec<Packet> {
    a.sends.iter().filter(|p| p.kind == kind).copied().collect()
}

#[test]
fn first_window_is_one_bdp_at_line_rate() {
    // 100 Gbps x 10 us = 125,000 B = 13.9 packets of 9000 B: 14 packets.
    let mut n = Ndp::from_config(&serde_json::Value::Null, &net()).unwrap();
    assert_eq!(bdp_window(Rate::gbps(100), Time::us(10), 9000), 14);
    let flows = vec![flow(0, 0, 1, 100 * MSS), flow(1, 2, 1, 3 * MSS)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    let data = kinds(&a, KIND_DATA);
    assert_eq!(data.len(), 14);
    for (i, d) in data.iter().enumerate() {
        assert_eq!(d.seq, i as u64 * MSS);
        assert_eq!((d.payload, d.size, d.prio), (MSS as u32, 9000, 1));
        assert!(d.flags.has(PacketFlags::DATA | PacketFlags::TRIMMABLE | PacketFlags::UNSCHEDULED));
        assert_eq!(d.flags.0, PacketFlags::DATA | PacketFlags::TRIMMABLE | PacketFlags::UNSCHEDULED);
    }
    // All of them leave in the same callback: the NIC serializes them back to back.
    assert_eq!(n.sender(0).unwrap().in_flight(), 14);
    // A shorter flow sends all of itself.
    let a = call(&mut n, &flows, Time::ZERO, 2, |n, c| n.start_flow(c, 1));
    assert_eq!(kinds(&a, KIND_DATA).len(), 3);
    // The window follows the network's BDP and can be set explicitly.
    let mut slow = net();
    slow.max_base_rtt = Time::us(5);
    let n2 = Ndp::from_config(&serde_json::Value::Null, &slow).unwrap();
    assert_eq!(n2.params().first_window(&flows[0]), 7); // 62,500 B / 9000 B = 6.9
    let n3 = Ndp::from_config(&json!({"initial_window": 4}), &net()).unwrap();
    assert_eq!(n3.params().first_window(&flows[0]), 4);
    // Without trimming the data is not trimmable.
    let mut n4 = Ndp::from_config(&json!({"trimming": false}), &net()).unwrap();
    let a = call(&mut n4, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    assert!(a.sends.iter().all(|d| !d.flags.has(PacketFlags::TRIMMABLE)));
}

#[test]
fn trimmed_header_is_nacked_and_that_sequence_resent_on_the_next_pull() {
    let mut n = Ndp::from_config(&json!({"initial_window": 4}), &net()).unwrap();
    let flows = vec![flow(0, 0, 1, 20 * MSS)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    let mut data = kinds(&a, KIND_DATA);
    assert_eq!(data.len(), 4);
    // Packet 1 is trimmed by a switch: payload cut, class 0.
    let mut hdr = data.remove(1);
    hdr.flags.set(PacketFlags::TRIMMED);
    hdr.payload = 0;
    hdr.size = 64;
    hdr.prio = 0;
    let t1 = Time::us(3);
    let a = call(&mut n, &flows, t1, 1, |n, c| n.on_packet(c, &hdr));
    let nacks = kinds(&a, KIND_NACK);
    assert_eq!(nacks.len(), 1);
    assert_eq!((nacks[0].seq, nacks[0].dst, nacks[0].prio, nacks[0].size), (MSS, 0, 0, 64));
    assert!(kinds(&a, KIND_ACK).is_empty());
    let pulls = kinds(&a, KIND_PULL);
    assert_eq!(pulls.len(), 1, "the header also queues a PULL; the idle pacer releases it");
    assert_eq!(pulls[0].aux, 1);
    // The NACK alone sends nothing: the retransmission waits for a PULL.
    let a = call(&mut n, &flows, t1 + Time::us(2), 0, |n, c| n.on_packet(c, &nacks[0]));
    assert!(a.sends.is_empty());
    assert_eq!(n.sender(0).unwrap().state(1), Some(PktState::QueuedRtx));
    // The next PULL resends exactly packet 1, ahead of new data (packet 4).
    let a = call(&mut n, &flows, t1 + Time::us(3), 0, |n, c| n.on_packet(c, &pulls[0]));
    let d = kinds(&a, KIND_DATA);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].seq, d[0].payload, d[0].aux2), (MSS, MSS as u32, DATA_RETX));
    assert!(!d[0].flags.has(PacketFlags::UNSCHEDULED), "pulled packets are scheduled");
    assert_eq!(n.flow_stats(0).retx_bytes, MSS);
    // A further PULL (pull number 2) sends new data.
    let mut p2 = pulls[0];
    p2.aux = 2;
    let a = call(&mut n, &flows, t1 + Time::us(4), 0, |n, c| n.on_packet(c, &p2));
    let d = kinds(&a, KIND_DATA);
    assert_eq!((d.len(), d[0].seq, d[0].aux2), (1, 4 * MSS, 0));
    // A stale PULL (number 2 again) sends nothing; a jump to 4 sends two packets.
    let a = call(&mut n, &flows, t1 + Time::us(5), 0, |n, c| n.on_packet(c, &p2));
    assert!(a.sends.is_empty());
    p2.aux = 4;
    let a = call(&mut n, &flows, t1 + Time::us(6), 0, |n, c| n.on_packet(c, &p2));
    let seqs: Vec<u64> = kinds(&a, KIND_DATA).iter().map(|d| d.seq / MSS).collect();
    assert_eq!(seqs, vec![5, 6]);
    assert_eq!(n.flow_stats(0).timeouts, 0);
}

/// Drive the receiving host: deliver `arrivals` (time, packet) and fire pacer timers in
/// time order; return (time, flow, pull number) of every PULL sent.
fn drive_receiver(
    n: &mut Ndp,
    flows: &[FlowInfo],
    host: NodeId,
    arrivals: Vec<(Time, Packet)>,
) -> Vec<(Time, u32, u64)> {
    let mut pulls = Vec::new();
    let mut timers: Vec<(Time, u64)> = Vec::new();
    let mut arr: VecDeque<(Time, Packet)> = arrivals.into();
    loop {
        timers.sort();
        let next_t = timers.first().map(|t| t.0);
        let next_a = arr.front().map(|a| a.0);
        let a = match (next_a, next_t) {
            (None, None) => break,
            (Some(ta), Some(tt)) if ta <= tt => {
                let (t, p) = arr.pop_front().unwrap();
                (t, call(n, flows, t, host, |n, c| n.on_packet(c, &p)))
            }
            (Some(_), None) => {
                let (t, p) = arr.pop_front().unwrap();
                (t, call(n, flows, t, host, |n, c| n.on_packet(c, &p)))
            }
            _ => {
                let (t, tok) = timers.remove(0);
                (t, call(n, flows, t, host, |n, c| n.on_timer(c, tok)))
            }
        };
        let (t, out) = a;
        for p in out.sends.iter().filter(|p| p.kind == KIND_PULL) {
            pulls.push((t, p.flow, p.aux));
        }
        timers.extend(out.timers.iter().copied());
    }
    pulls
}

#[test]
fn pulls_are_paced_one_mtu_apart_and_shared_fairly_across_senders() {
    let mut n = Ndp::from_config(&serde_json::Value::Null, &net()).unwrap();
    // Three senders (hosts 0, 1, 2) to host 3; a burst of 3 packets from each at t0.
    let flows: Vec<FlowInfo> = (0..3).map(|i| flow(i, i, 3, 50 * MSS)).collect();
    let t0 = Time::us(7);
    let mut arrivals = Vec::new();
    for k in 0..3u64 {
        for f in 0..3u32 {
            let pkt = Packet {
                dst: 3,
                src: f,
                flow: f,
                kind: KIND_DATA,
                seq: k * MSS,
                payload: MSS as u32,
                size: 9000,
                flags: PacketFlags(PacketFlags::DATA),
                ..Default::default()
            };
            arrivals.push((t0, pkt));
        }
    }
    let pulls = drive_receiver(&mut n, &flows, 3, arrivals);
    assert_eq!(pulls.len(), 9);
    let gap = Rate::gbps(100).tx_time(Bytes(9000)); // 720 ns
    assert_eq!(gap, Time::ns(720));
    for (i, &(t, _, _)) in pulls.iter().enumerate() {
        assert_eq!(t, t0 + gap * i as u64, "PULL {i}");
    }
    // Round robin over the three flows, pull numbers counting up per flow.
    let order: Vec<(u32, u64)> = pulls.iter().map(|p| (p.1, p.2)).collect();
    assert_eq!(order, vec![(0, 1), (1, 1), (2, 1), (0, 2), (1, 2), (2, 2), (0, 3), (1, 3), (2, 3)]);
    assert_eq!(n.pull_queue(3).unwrap().released(), 9);
    // After an idle period the next PULL leaves at once.
    let late = t0 + Time::us(100);
    let pkt = Packet {
        dst: 3,
        flow: 0,
        kind: KIND_DATA,
        seq: 3 * MSS,
        payload: MSS as u32,
        size: 9000,
        flags: PacketFlags(PacketFlags::DATA),
        ..Default::default()
    };
    let p = drive_receiver(&mut n, &flows, 3, vec![(late, pkt)]);
    assert_eq!(p, vec![(late, 0, 4)]);
}

#[test]
fn completion_acks_and_withdraws_pending_pulls() {
    let mut n = Ndp::from_config(&serde_json::Value::Null, &net()).unwrap();
    let flows = vec![flow(0, 0, 2, 2 * MSS + 5), flow(1, 1, 2, 10 * MSS)];
    let mk = |f: u32, idx: u64, payload: u64| Packet {
        dst: 2,
        flow: f,
        kind: KIND_DATA,
        seq: idx * MSS,
        payload: payload as u32,
        size: (payload + 40) as u32,
        flags: PacketFlags(PacketFlags::DATA),
        ..Default::default()
    };
    // Flow 1 arrives first (its PULL leaves at once), then flow 0's three packets: their
    // PULLs queue behind the pacer.
    let t = Time::us(1);
    let arr = vec![(t, mk(1, 0, MSS)), (t, mk(0, 0, MSS)), (t, mk(0, 2, 5))];
    let mut outs = Vec::new();
    for (at, p) in &arr {
        outs.push(call(&mut n, &flows, *at, 2, |n, c| n.on_packet(c, p)));
    }
    assert_eq!(n.receiver(0).unwrap().pending_pulls(), 2);
    // The last missing packet completes flow 0: ACK, completion, no PULL, pending gone.
    let a = call(&mut n, &flows, t, 2, |n, c| n.on_packet(c, &mk(0, 1, MSS)));
    assert_eq!(a.completions, vec![0]);
    assert_eq!(kinds(&a, KIND_ACK).len(), 1);
    assert_eq!(kinds(&a, KIND_ACK)[0].ack, 2 * MSS + 5);
    assert!(kinds(&a, KIND_PULL).is_empty());
    assert_eq!(n.receiver(0).unwrap().pending_pulls(), 0);
    // A duplicate after completion is ACKed again, never completes twice, never pulls.
    let a = call(&mut n, &flows, t, 2, |n, c| n.on_packet(c, &mk(0, 1, MSS)));
    assert!(a.completions.is_empty());
    assert_eq!(kinds(&a, KIND_ACK).len(), 1);
    // A trimmed header of a packet already held (of a pulled retransmission: its second
    // token) is ACKed, not NACKed, and returns its PULL.
    let mut h = mk(1, 0, 0);
    h.flags.set(PacketFlags::TRIMMED);
    h.aux = 2;
    let a = call(&mut n, &flows, t, 2, |n, c| n.on_packet(c, &h));
    assert_eq!((kinds(&a, KIND_ACK).len(), kinds(&a, KIND_NACK).len()), (1, 0));
    // The pacer's next slot goes to flow 1 (flow 0's stale ring entry is skipped).
    let tok = outs.iter().flat_map(|o| o.timers.iter()).last().unwrap().1;
    let at = t + n.params().pull_interval;
    let a = call(&mut n, &flows, at, 2, |n, c| n.on_timer(c, tok));
    let p = kinds(&a, KIND_PULL);
    assert_eq!((p.len(), p[0].flow, p[0].aux), (1, 1, 2));
}

#[test]
fn sender_acks_finish_the_flow_and_stop_the_timer() {
    let mut n = Ndp::from_config(&json!({"initial_window": 2}), &net()).unwrap();
    let flows = vec![flow(0, 0, 1, 2 * MSS)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    assert_eq!(a.timers.len(), 1);
    assert_eq!(a.timers[0].0, Time::ms(1));
    for i in 0..2 {
        let mut ack = Packet { dst: 0, flow: 0, kind: KIND_ACK, seq: i * MSS, ..Default::default() };
        ack.src = 1;
        call(&mut n, &flows, Time::us(5), 0, |n, c| n.on_packet(c, &ack));
    }
    assert!(n.sender(0).unwrap().is_done());
    let tok = a.timers[0].1;
    let a = call(&mut n, &flows, Time::ms(1), 0, |n, c| n.on_timer(c, tok));
    assert!(a.sends.is_empty());
    assert_eq!(n.flow_stats(0), FlowStats::default());
}

#[test]
fn timeout_resends_an_unanswered_packet_at_once() {
    // Without trimming a dropped packet gets neither ACK nor NACK.
    let mut n = Ndp::from_config(&json!({"initial_window": 3, "trimming": false, "rto": "100us"}), &net()).unwrap();
    let flows = vec![flow(0, 0, 1, 3 * MSS)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    let tok = a.timers[0].1;
    assert_eq!(a.timers[0].0, Time::us(100));
    // Packets 0 and 2 are ACKed (their PULLs find nothing new to send); packet 1 was dropped.
    for i in [0u64, 2] {
        let ack = Packet { dst: 0, flow: 0, kind: KIND_ACK, seq: i * MSS, ..Default::default() };
        call(&mut n, &flows, Time::us(10), 0, |n, c| n.on_packet(c, &ack));
    }
    let a = call(&mut n, &flows, Time::us(100), 0, |n, c| n.on_timer(c, tok));
    let d = kinds(&a, KIND_DATA);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].seq, d[0].aux2), (MSS, DATA_RETX | DATA_TOKENLESS));
    assert!(d[0].flags.has(PacketFlags::UNSCHEDULED), "sent without a PULL");
    assert_eq!(n.flow_stats(0), FlowStats { retx_bytes: MSS, timeouts: 1, ..FlowStats::default() });
    // The next deadline is one rto after the resend.
    assert_eq!(a.timers.len(), 1);
    assert_eq!(a.timers[0].0, Time::us(200));
}

#[test]
fn receiver_pulls_once_per_token_taking_transmission_whichever_copies_arrive() {
    // A copy carries in `aux` how many of its packet's transmissions so far took a
    // pull-loop token; a timeout resend takes none and repeats its predecessor's count.
    let mut n = Ndp::from_config(&serde_json::Value::Null, &net()).unwrap();
    let flows = vec![flow(0, 0, 2, 8 * MSS)];
    let mk = |idx: u64, tokens: u64, tokenless: bool, trimmed: bool| {
        let mut flags = PacketFlags(PacketFlags::DATA | PacketFlags::TRIMMABLE);
        if tokenless {
            flags.set(PacketFlags::UNSCHEDULED);
        }
        if trimmed {
            flags.set(PacketFlags::TRIMMED);
        }
        let payload = if trimmed { 0 } else { MSS };
        Packet {
            dst: 2,
            flow: 0,
            kind: KIND_DATA,
            seq: idx * MSS,
            payload: payload as u32,
            size: (payload + 40) as u32,
            flags,
            aux: tokens,
            aux2: if tokenless { DATA_RETX | DATA_TOKENLESS } else { 0 },
            ..Default::default()
        }
    };
    let t = Time::us(1);
    let mut pulls_after = |p: Packet| {
        call(&mut n, &flows, t, 2, |n, c| n.on_packet(c, &p));
        let r = n.receiver(0).unwrap();
        r.pulls_sent() + r.pending_pulls() as u64
    };
    // Original, then its timeout resend (the original was late, not lost): one PULL.
    assert_eq!(pulls_after(mk(0, 1, false, false)), 1);
    assert_eq!(pulls_after(mk(0, 1, true, false)), 1);
    // The resend first, then the late original: one PULL.
    assert_eq!(pulls_after(mk(1, 1, true, false)), 2);
    assert_eq!(pulls_after(mk(1, 1, false, false)), 2);
    // The trimmed header of a third copy (another timeout resend): ACKed, no PULL.
    assert_eq!(pulls_after(mk(1, 1, true, true)), 2);
    // A resend of a packet really lost is pulled for (it restores the lost token).
    assert_eq!(pulls_after(mk(2, 1, true, false)), 3);
    // Header of a trimmed original, then its pulled retransmission: two PULLs.
    assert_eq!(pulls_after(mk(3, 1, false, true)), 4);
    assert_eq!(pulls_after(mk(3, 2, false, false)), 5);
    // Original lost; a pulled resend (2nd token) and a timeout resend of that resend both
    // arrive, the later-stamped first: two PULLs, the lost token is restored.
    assert_eq!(pulls_after(mk(4, 2, true, false)), 6);
    assert_eq!(pulls_after(mk(4, 2, false, false)), 7);
    // A pulled duplicate of a held packet returns its own token.
    assert_eq!(pulls_after(mk(0, 2, false, false)), 8);
}

#[test]
fn timeout_resend_repeats_the_token_count_of_the_copy_it_replaces() {
    let mut n = Ndp::from_config(&json!({"initial_window": 2, "trimming": false, "rto": "100us"}), &net()).unwrap();
    let flows = vec![flow(0, 0, 1, 2 * MSS)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    let d = kinds(&a, KIND_DATA);
    assert_eq!((d[0].aux, d[1].aux), (1, 1));
    let tok = a.timers[0].1;
    let a = call(&mut n, &flows, Time::us(100), 0, |n, c| n.on_timer(c, tok));
    let d = kinds(&a, KIND_DATA);
    assert_eq!(d.len(), 2);
    assert!(d.iter().all(|p| p.aux == 1 && p.aux2 == DATA_RETX | DATA_TOKENLESS));
}

#[test]
fn nacked_packet_waits_for_a_pull_not_for_the_timer() {
    let mut n = Ndp::from_config(&json!({"initial_window": 3, "rto": "100us"}), &net()).unwrap();
    let flows = vec![flow(0, 0, 1, 10 * MSS)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    let tok = a.timers[0].1;
    for (kind, i) in [(KIND_NACK, 0u64), (KIND_NACK, 1), (KIND_ACK, 2)] {
        let fb = Packet { dst: 0, flow: 0, kind, seq: i * MSS, ..Default::default() };
        call(&mut n, &flows, Time::us(5), 0, |n, c| n.on_packet(c, &fb));
    }
    // A PULL at 90 us resends packet 0; packet 1 stays queued for the next PULL.
    let pull = Packet { dst: 0, flow: 0, kind: KIND_PULL, aux: 1, ..Default::default() };
    let a = call(&mut n, &flows, Time::us(90), 0, |n, c| n.on_packet(c, &pull));
    assert_eq!(kinds(&a, KIND_DATA)[0].seq, 0);
    // The first deadline (100 us) passes: nothing is resent, packet 1 still waits.
    let a = call(&mut n, &flows, Time::us(100), 0, |n, c| n.on_timer(c, tok));
    assert!(a.sends.is_empty());
    assert_eq!(n.sender(0).unwrap().state(1), Some(PktState::QueuedRtx));
    assert_eq!(n.flow_stats(0).timeouts, 0);
    // The timer is re-armed for packet 0's resend (90 us + rto).
    assert_eq!(a.timers.len(), 1);
    assert_eq!(a.timers[0].0, Time::us(190));
}

#[test]
fn stalled_pull_loop_is_restarted_and_banked_pulls_serve_late_nacks() {
    let mut n = Ndp::from_config(&json!({"initial_window": 1, "rto": "100us"}), &net()).unwrap();
    let flows = vec![flow(0, 0, 1, 4 * MSS)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    let tok = a.timers[0].1;
    // Its header is NACKed at 5 us, and the matching PULL is lost.
    let nack = Packet { dst: 0, flow: 0, kind: KIND_NACK, seq: 0, ..Default::default() };
    let a = call(&mut n, &flows, Time::us(5), 0, |n, c| n.on_packet(c, &nack));
    assert!(a.sends.is_empty());
    // The old deadline (100 us) fires: the packet is queued, not in flight; the stall
    // timer runs from the start (no PULL yet): 100 us -> resend packet 0 now.
    let a = call(&mut n, &flows, Time::us(100), 0, |n, c| n.on_timer(c, tok));
    let d = kinds(&a, KIND_DATA);
    assert_eq!((d.len(), d[0].seq, d[0].aux2), (1, 0, DATA_RETX));
    assert_eq!(n.flow_stats(0).timeouts, 1);
    // A PULL that overtook a NACK is banked and serves the NACK at once.
    let ack = Packet { dst: 0, flow: 0, kind: KIND_ACK, seq: 0, ..Default::default() };
    call(&mut n, &flows, Time::us(110), 0, |n, c| n.on_packet(c, &ack));
    let mut pull = Packet { dst: 0, flow: 0, kind: KIND_PULL, aux: 1, ..Default::default() };
    let a = call(&mut n, &flows, Time::us(111), 0, |n, c| n.on_packet(c, &pull));
    assert_eq!(kinds(&a, KIND_DATA)[0].seq, MSS);
    pull.aux = 4; // three more PULLs: packets 2 and 3, then one banked
    let a = call(&mut n, &flows, Time::us(112), 0, |n, c| n.on_packet(c, &pull));
    assert_eq!(kinds(&a, KIND_DATA).len(), 2);
    assert_eq!(n.sender(0).unwrap().banked_pulls(), 1);
    let nack = Packet { dst: 0, flow: 0, kind: KIND_NACK, seq: 3 * MSS, ..Default::default() };
    let a = call(&mut n, &flows, Time::us(113), 0, |n, c| n.on_packet(c, &nack));
    let d = kinds(&a, KIND_DATA);
    assert_eq!((d.len(), d[0].seq), (1, 3 * MSS));
    assert_eq!(n.sender(0).unwrap().banked_pulls(), 0);
}

#[test]
fn mark_lost_queues_for_the_next_pull() {
    let p = NdpConfig::default().resolve(&net()).unwrap();
    let f = flow(0, 0, 1, 10 * MSS);
    let mut s = NdpSender::new(&f, &p);
    let mut out = Actions::new();
    s.send_first_window(Time::ZERO, &p, 3, &mut out);
    assert_eq!(out.sends.len(), 3);
    out.clear();
    s.mark_lost(Time::us(1), &p, 2, &mut out);
    assert!(out.sends.is_empty());
    assert_eq!(s.queued_rtx(), 1);
    s.on_pull(Time::us(2), &p, 1, &mut out);
    assert_eq!(out.sends[0].seq, 2 * MSS);
}

#[test]
fn extra_pulls_from_another_building_block_are_paced_too() {
    let mut n = Ndp::from_config(&serde_json::Value::Null, &net()).unwrap();
    let flows = vec![flow(0, 0, 1, 10 * MSS)];
    // No data has arrived yet (e.g. only a probe did): three PULLs, one MTU time apart.
    let t = Time::us(2);
    let a = call(&mut n, &flows, t, 1, |n, c| n.queue_pulls(c, 0, 3));
    assert_eq!(kinds(&a, KIND_PULL).len(), 1);
    assert_eq!(n.receiver(0).unwrap().pending_pulls(), 2);
    let (at, tok) = a.timers[0];
    assert_eq!(at, t + Time::ns(720));
    let a = call(&mut n, &flows, at, 1, |n, c| n.on_timer(c, tok));
    assert_eq!(kinds(&a, KIND_PULL)[0].aux, 2);
    // Only the receiving host queues PULLs.
    let a = call(&mut n, &flows, at, 0, |n, c| n.queue_pulls(c, 0, 3));
    assert!(a.sends.is_empty() && a.timers.is_empty());
}

#[test]
fn config_errors_name_the_field() {
    let cases = [
        (json!({"initial_window": 0}), "transport.initial_window"),
        (json!({"rto": 0}), "transport.rto"),
        (json!({"rto": "soon"}), "transport.rto"),
        (json!({"pull_rate": 0}), "transport.pull_rate"),
        (json!({"data_prio": 8}), "transport.data_prio"),
        (json!({"trimming": "yes"}), "transport.trimming"),
        (json!({"cwnd": 3}), "transport.cwnd"),
    ];
    for (cfg, field) in cases {
        let e = Ndp::from_config(&cfg, &net()).err().unwrap_or_else(|| panic!("{cfg} accepted"));
        assert_eq!(e.field(), field, "{cfg}: {e}");
        assert!(e.to_string().contains(field), "{e}");
    }
    let mut one = net();
    one.priorities = 1;
    assert_eq!(Ndp::from_config(&serde_json::Value::Null, &one).unwrap().params().data_prio, 0);
    let mut tiny = net();
    tiny.mtu = Bytes(40);
    assert_eq!(Ndp::from_config(&serde_json::Value::Null, &tiny).err().unwrap().field(), "network.mtu");
    let p = Ndp::from_config(&json!({"pull_rate": "40Gbps", "rto": "200us"}), &net()).unwrap();
    assert_eq!(p.params().pull_interval, Time::ns(1800));
    assert_eq!(p.params().rto, Time::us(200));
}

// ------------------------------------------------------------- NDP + Aeolus

fn aeolus_ndp(extra: serde_json::Value) -> Ndp {
    let mut cfg = json!({"aeolus": true, "initial_window": 4});
    for (k, v) in extra.as_object().unwrap() {
        cfg[k] = v.clone();
    }
    Ndp::from_config(&cfg, &net()).unwrap()
}

fn ack_of(d: &Packet, unscheduled: bool) -> Packet {
    Packet {
        dst: 0,
        src: 1,
        flow: d.flow,
        kind: KIND_ACK,
        seq: d.seq,
        aux2: if unscheduled { ACK_UNSCHEDULED } else { 0 },
        ..Default::default()
    }
}

fn pull(no: u64) -> Packet {
    Packet { dst: 0, src: 1, flow: 0, kind: KIND_PULL, aux: no, ..Default::default() }
}

#[test]
fn aeolus_first_window_is_unscheduled_and_the_probe_follows_it() {
    let mut n = aeolus_ndp(json!({}));
    assert!(!n.params().trimming, "aeolus turns trimming off by default");
    let flows = vec![flow(0, 0, 1, 10 * MSS + 5)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    assert_eq!(a.sends.len(), 5);
    for (i, d) in a.sends[..4].iter().enumerate() {
        assert_eq!((d.kind, d.seq), (KIND_DATA, i as u64 * MSS));
        assert_eq!(d.flags.0, PacketFlags::DATA | PacketFlags::UNSCHEDULED, "not trimmable");
    }
    // The probe: last in the NIC, same class as the data, control size, never dropped
    // selectively; it names the last unscheduled packet and carries the flow size.
    let pr = a.sends[4];
    assert_eq!((pr.kind, pr.prio, pr.size, pr.aux, pr.seq, pr.ack), (KIND_PROBE, 1, 64, 3, 3 * MSS, 10 * MSS + 5));
    assert!(!pr.flags.has(PacketFlags::UNSCHEDULED) && !pr.is_data());
    // A flow shorter than the window probes after its last packet.
    let flows = vec![flow(0, 0, 1, 2 * MSS)];
    let mut n = aeolus_ndp(json!({}));
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    assert_eq!(a.sends.iter().map(|p| p.kind).collect::<Vec<_>>(), vec![KIND_DATA, KIND_DATA, KIND_PROBE]);
    assert_eq!(a.sends[2].aux, 1);
    // Without the probe: no probe.
    let mut n = aeolus_ndp(json!({"aeolus_probe": false}));
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    assert!(kinds(&a, KIND_PROBE).is_empty());
}

/// Sender: packet 1 of the first window (0..4) is dropped by a selective-dropping
/// switch. The ACK of packet 2 proves it lost (SACK in the middle) long before the
/// timeout; the next PULL resends it, as a scheduled packet, ahead of new data; it is
/// never resent again (later SACKs, the probe ACK, further PULLs, the old deadline).
#[test]
fn aeolus_sack_in_the_middle_resends_a_lost_packet_once_on_the_next_pull() {
    let mut n = aeolus_ndp(json!({"rto": "100us"}));
    let flows = vec![flow(0, 0, 1, 10 * MSS)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    let data = kinds(&a, KIND_DATA);
    let tok = a.timers[0].1;
    // ACK of 0: nothing lost. ACK of 2: 1 is lost and queued (no send without a PULL).
    let a = call(&mut n, &flows, Time::us(3), 0, |n, c| n.on_packet(c, &ack_of(&data[0], true)));
    assert!(a.sends.is_empty());
    let a = call(&mut n, &flows, Time::us(4), 0, |n, c| n.on_packet(c, &ack_of(&data[2], true)));
    assert!(a.sends.is_empty());
    assert_eq!(n.sender(0).unwrap().state(1), Some(PktState::QueuedRtx));
    assert_eq!(n.sender(0).unwrap().aeolus().unwrap().detected_lost(), 1);
    // A plain (non-SACK) ACK proves nothing: packet 3 stays in flight.
    assert_eq!(n.sender(0).unwrap().state(3), Some(PktState::InFlight));
    // The next PULL resends 1, scheduled.
    let a = call(&mut n, &flows, Time::us(5), 0, |n, c| n.on_packet(c, &pull(1)));
    let d = kinds(&a, KIND_DATA);
    assert_eq!(d.len(), 1);
    assert_eq!((d[0].seq, d[0].aux2), (MSS, DATA_RETX));
    assert!(!d[0].flags.has(PacketFlags::UNSCHEDULED), "a pulled resend is scheduled");
    // ACK of 3 and the probe ACK: nothing more lost; 1 is not queued again.
    call(&mut n, &flows, Time::us(6), 0, |n, c| n.on_packet(c, &ack_of(&data[3], true)));
    let pa = Packet { dst: 0, flow: 0, kind: KIND_PROBE_ACK, aux: 3, ..Default::default() };
    call(&mut n, &flows, Time::us(6), 0, |n, c| n.on_packet(c, &pa));
    assert_eq!(n.sender(0).unwrap().queued_rtx(), 0);
    let a = call(&mut n, &flows, Time::us(7), 0, |n, c| n.on_packet(c, &pull(3)));
    let seqs: Vec<u64> = kinds(&a, KIND_DATA).iter().map(|d| d.seq / MSS).collect();
    assert_eq!(seqs, vec![4, 5], "new data only");
    // The first deadline (100 us) passes: nothing to time out (1 was resent at 5 us and
    // is timed from then; ACK it).
    call(&mut n, &flows, Time::us(8), 0, |n, c| n.on_packet(c, &ack_of(&d[0], false)));
    let a = call(&mut n, &flows, Time::us(100), 0, |n, c| n.on_timer(c, tok));
    assert!(kinds(&a, KIND_DATA).iter().all(|d| d.seq != MSS));
    let s = n.sender(0).unwrap();
    assert_eq!(s.aeolus().unwrap().resent(), 1);
    assert_eq!(n.flow_stats(0), FlowStats { retx_bytes: MSS, timeouts: 0, ..FlowStats::default() });
}

/// Sender: the last two unscheduled packets are dropped (tail loss). No later packet
/// reveals them; the probe's ACK does, and the next two PULLs resend them, once each.
#[test]
fn aeolus_probe_ack_reveals_tail_losses_without_a_timeout() {
    let mut n = aeolus_ndp(json!({}));
    let flows = vec![flow(0, 0, 1, 4 * MSS)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    let data = kinds(&a, KIND_DATA);
    for d in &data[..2] {
        call(&mut n, &flows, Time::us(3), 0, |n, c| n.on_packet(c, &ack_of(d, true)));
    }
    // Their PULLs find nothing new: banked.
    call(&mut n, &flows, Time::us(4), 0, |n, c| n.on_packet(c, &pull(2)));
    assert_eq!(n.sender(0).unwrap().banked_pulls(), 2);
    assert_eq!(n.sender(0).unwrap().state(2), Some(PktState::InFlight));
    // The probe ACK: 2 and 3 are lost; the two banked PULLs resend them at once.
    let pa = Packet { dst: 0, flow: 0, kind: KIND_PROBE_ACK, aux: 3, ..Default::default() };
    let a = call(&mut n, &flows, Time::us(5), 0, |n, c| n.on_packet(c, &pa));
    let seqs: Vec<u64> = kinds(&a, KIND_DATA).iter().map(|d| d.seq / MSS).collect();
    assert_eq!(seqs, vec![2, 3]);
    assert!(kinds(&a, KIND_DATA).iter().all(|d| d.aux2 == DATA_RETX && !d.flags.has(PacketFlags::UNSCHEDULED)));
    // The receiver's extra PULLs for them (3, 4) now find nothing; a second probe ACK
    // (duplicate) declares nothing.
    let a = call(&mut n, &flows, Time::us(6), 0, |n, c| n.on_packet(c, &pull(4)));
    assert!(a.sends.is_empty());
    call(&mut n, &flows, Time::us(6), 0, |n, c| n.on_packet(c, &pa));
    assert_eq!(n.sender(0).unwrap().queued_rtx(), 0);
    assert_eq!(n.flow_stats(0), FlowStats { retx_bytes: 2 * MSS, timeouts: 0, ..FlowStats::default() });
    assert_eq!(n.sender(0).unwrap().aeolus().unwrap().resent(), 2);
}

/// Receiver: unscheduled packets 0 and 2 of 4 arrive, then the probe naming 3. Each
/// original unscheduled arrival is ACKed with the SACK bit; packet 2 proves 1 lost and
/// the probe proves 3 lost, and each loss adds one PULL to the one per arrival: four
/// PULLs in all, as many as the window's tokens, paced one MTU time apart.
#[test]
fn aeolus_receiver_pulls_for_every_declared_loss() {
    let mut n = aeolus_ndp(json!({}));
    let flows = vec![flow(0, 0, 1, 10 * MSS)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    let sent = a.sends.clone();
    let t = Time::us(3);
    let arrivals = vec![(t, sent[0]), (t, sent[2]), (t + Time::ns(10), sent[4])];
    // Check the feedback of each arrival first.
    let mut m = aeolus_ndp(json!({}));
    let a0 = call(&mut m, &flows, t, 1, |n, c| n.on_packet(c, &sent[0]));
    assert_eq!(kinds(&a0, KIND_ACK)[0].aux2, ACK_UNSCHEDULED);
    let a2 = call(&mut m, &flows, t, 1, |n, c| n.on_packet(c, &sent[2]));
    assert_eq!(kinds(&a2, KIND_ACK)[0].aux2, ACK_UNSCHEDULED);
    assert_eq!(m.receiver(0).unwrap().aeolus().unwrap().declared_lost(), 1);
    assert_eq!(m.receiver(0).unwrap().pending_pulls(), 2, "one for 2, one for lost 1");
    let ap = call(&mut m, &flows, t, 1, |n, c| n.on_packet(c, &sent[4]));
    let pa = kinds(&ap, KIND_PROBE_ACK);
    assert_eq!((pa.len(), pa[0].aux, pa[0].dst, pa[0].prio), (1, 3, 0, 0));
    assert_eq!(m.receiver(0).unwrap().aeolus().unwrap().declared_lost(), 2);
    // A scheduled resend is ACKed without the SACK bit and declares nothing.
    let mut r1 = sent[1];
    r1.flags = PacketFlags(PacketFlags::DATA);
    r1.aux2 = DATA_RETX;
    let a = call(&mut m, &flows, t, 1, |n, c| n.on_packet(c, &r1));
    assert_eq!(kinds(&a, KIND_ACK)[0].aux2, 0);
    // Paced: the four PULLs leave one MTU time apart, numbered 1..4.
    let pulls = drive_receiver(&mut n, &flows, 1, arrivals);
    let gap = n.params().pull_interval;
    assert_eq!(pulls.iter().map(|p| p.2).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
    for (i, p) in pulls.iter().enumerate() {
        assert_eq!(p.0, t + gap * i as u64);
    }
    // A probe for a flow whose packets were all lost still starts its pull loop.
    let mut m = aeolus_ndp(json!({}));
    let a = call(&mut m, &flows, t, 1, |n, c| n.on_packet(c, &sent[4]));
    assert_eq!(kinds(&a, KIND_PULL).len(), 1);
    assert_eq!(m.receiver(0).unwrap().pending_pulls(), 3);
}

/// Without the probe a tail loss is found only by Aeolus' class (3): a PULL that finds
/// no lost and no new packet resends the oldest unacknowledged unscheduled packet, once.
#[test]
fn aeolus_without_probe_resends_unacked_packets_on_surplus_pulls_once() {
    let mut n = aeolus_ndp(json!({"aeolus_probe": false}));
    let flows = vec![flow(0, 0, 1, 4 * MSS)];
    let a = call(&mut n, &flows, Time::ZERO, 0, |n, c| n.start_flow(c, 0));
    let data = kinds(&a, KIND_DATA);
    for d in &data[..3] {
        call(&mut n, &flows, Time::us(3), 0, |n, c| n.on_packet(c, &ack_of(d, true)));
    }
    // Three PULLs (one per arrival): the first resends 3, the others are banked.
    let a = call(&mut n, &flows, Time::us(4), 0, |n, c| n.on_packet(c, &pull(3)));
    let d = kinds(&a, KIND_DATA);
    assert_eq!((d.len(), d[0].seq, d[0].aux2), (1, 3 * MSS, DATA_RETX));
    assert_eq!(n.sender(0).unwrap().banked_pulls(), 2);
    assert_eq!(n.flow_stats(0).timeouts, 0);
}

#[test]
fn aeolus_config_errors_name_the_field() {
    let e = Ndp::from_config(&json!({"aeolus": true, "trimming": true}), &net()).err().unwrap();
    assert_eq!(e.field(), "transport.trimming", "{e}");
    let e = Ndp::from_config(&json!({"aeolus_probe": false}), &net()).err().unwrap();
    assert_eq!(e.field(), "transport.aeolus_probe", "{e}");
    let e = Ndp::from_config(&json!({"aeolus": 1}), &net()).err().unwrap();
    assert_eq!(e.field(), "transport.aeolus", "{e}");
    let p = Ndp::from_config(&json!({"aeolus": true, "trimming": false}), &net()).unwrap();
    assert_eq!(p.params().aeolus, Some(AeolusConfig { mode: UnschedMode::SelectiveDrop, probe: true }));
    assert!(Ndp::from_config(&serde_json::Value::Null, &net()).unwrap().params().aeolus.is_none());
}
