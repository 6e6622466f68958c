//! IA-TCP and M21TCP (as reconstructed) against TCP incast, in the setting of PTCP §V-A
//! (reduced): N synchronized senders each send 64 KB to one receiver through one switch
//! (1 Gbps links, 25 us per link, a 96 KB buffer, RTO_min 200 ms), on the Linux host model.
//!
//! Expected from the mechanisms alone (independent of the simulator):
//! - IA-TCP grants each of N connections max(1, floor(8.56 / N)) segments and spaces ACKs so
//!   the N windows carry C; with a 1-segment initial window the first round trip offers N
//!   packets, which fit buffer + pipe (96 KB + 12.5 KB = 72 packets of 1500 B) below 72
//!   senders. So no drop and no timeout there, and the round ends near the bottleneck's time.
//! - M21TCP's switch stamps (B + C RTT) / N; with its 2-segment initial window the first
//!   round trip offers 2N packets, which overflow from N > 36 (PTCP's "36 connections") and
//!   cost an RTO_min; below that its windows stay within buffer + pipe (but for the first
//!   packets of a round, stamped before the port has counted every flow).

mod common;

use common::*;

#[test]
fn iatcp_no_timeouts_below_the_one_segment_floor() {
    for n in [16u32, 48, 64] {
        let r = incast("iatcp", "", n);
        assert_eq!((r.drops, r.timeouts), (0, 0), "N={n}: IA-TCP keeps the flight within buffer + pipe");
        // The ACK interval makes the senders together carry about C: within 10% of the
        // bottleneck's time (the first RTT and the random first holds cost a little).
        assert!(r.qct_ms < 1.10 * incast_ideal_ms(n), "N={n}: {} ms vs {} ms", r.qct_ms, incast_ideal_ms(n));
    }
}

#[test]
fn m21tcp_flat_up_to_36_then_first_window_overflows() {
    let r = incast("m21tcp", "", 32);
    // The first packets of the round are stamped while the port has counted only the flows
    // arrived so far (N = 1, 2, ...), so their ACKs briefly grant large windows: a few drops,
    // all repaired by fast retransmit (measured: 15 drops, 0 timeouts).
    assert_eq!(r.timeouts, 0, "N=32: no timeout ({} drops)", r.drops);
    assert!(r.qct_ms < 1.10 * incast_ideal_ms(32), "N=32: {} ms", r.qct_ms);
    let r = incast("m21tcp", "", 48);
    assert!(r.drops > 0 && r.timeouts > 0, "N=48: 96 packets in the first round trip overflow");
    assert!(r.qct_ms >= INCAST_RTO_MIN_MS, "N=48: the round waits for RTO_min: {} ms", r.qct_ms);
}
