//! PPT: a pragmatic transport for datacenters (Suo et al., SIGCOMM 2024).
//!
//! # What is modelled
//! - **Dual-loop rate control (§3)**, on the engine of [`crate::transport::lowprio`]:
//!   - HCP = DCTCP, unchanged ([`crate::transport::tcp`]), from the head of the send buffer.
//!   - LCP = opportunistic packets (flag `OPPORTUNISTIC`) from the tail of the send buffer
//!     backwards, in the low-priority half of the classes.
//!   - **Intermittent loop initialization (§3.1)**. Case 1: at flow start, I = BDP - initial
//!     window (BDP = the flow's path rate x base RTT); for flows identified as large the loop
//!     opens in the flow's 2nd RTT, at its first HCP ACK, with I = BDP - the HCP's window of
//!     that round (so the loops' sum stays within the MW, §3), and not at all if the HCP has
//!     already cut its window by then (case 1 is the spare bandwidth "before the flow's window
//!     reaches the MW"; under incast the first window comes back ECN-marked). Case 2: after
//!     start-up (once DCTCP's ssthresh is finite, i.e. after the first window reduction), at
//!     the end of every HCP round (one
//!     window of data, like DCTCP's alpha update), if alpha is at alpha_min, the lowest
//!     alpha sampled since start-up ended ("the minimum value alpha_min in the past RTTs"),
//!     no loop is open and no case-2 loop has been opened yet in the current *congestion
//!     episode* (see below), a loop opens with I = min((1/2 - alpha_min) x W_max,
//!     W_max - cwnd): Eq. 2, kept within the gap between the HCP's window and W_max
//!     (§3: EWD "ensures, in every RTT, the window summation of LCP and HCP will not exceed
//!     the MW a flow experienced in the past"; §2.3 fills "the gap ... to MW"). W_max = the
//!     largest cwnd from the end of the first round after start-up (footnote 3).
//!   - **Exponential window decrease (§3.2)**: the initial window is paced over one RTT
//!     (rate I/RTT); the receiver returns one low-priority ACK per two opportunistic packets;
//!     each LP ACK without ECE releases one opportunistic packet, one with ECE releases none
//!     and also cancels what is left of the paced initial window (§3.2 first remark; §6.1.2:
//!     PPT falls back to DCTCP "by suspending opportunistic packet transmission with EWD and
//!     ECN"); the loop ends after 2 RTTs without LP ACKs (or when the tail reaches the HCP).
//!   - **Meeting in the middle (§5.2)**: LP ACKs carry the byte ranges they acknowledge and
//!     HCP ACKs the receiver's SACK block; the HCP skips bytes known delivered and its ACK
//!     jumps over LCP data the receiver holds in order. Nothing the sender knows delivered is
//!     sent again by either loop.
//! - **Buffer-aware flow scheduling (§4)**:
//!   - *Identification (§4.1)*: the application writes min(flow size, `send_buffer`) into the
//!     send buffer with its first call; a flow whose first write exceeds
//!     `identification_threshold` is large from its first packet. As the HCP's data is
//!     acknowledged the application refills the buffer, so the LCP's tail is
//!     min(size, snd_una + send_buffer).
//!   - *Mirror-symmetric tagging (§4.2)* over 8 classes: HCP in P0-P3, LCP in P4-P7;
//!     identified large flows use P3/P7 throughout; other flows start at P0/P4 and are demoted
//!     in step (P_i / P_i+4) by the bytes the flow has sent in both loops, with the PIAS
//!     thresholds `thresholds` ([`crate::transport::tagging::Mlfq`]). ACKs ride P0.
//! - **ECN thresholds (§3.2, Eq. 3)**: K = lambda x C x RTT per queue, lambda = 0.17 for
//!   HCP classes and 0.1 for LCP classes (`lambda_hcp`, `lambda_lcp`), the LCP classes
//!   marked on the port's buffer occupancy. Switch queues belong to the scenario's
//!   `[network]` table, which a transport cannot change at run time; PPT declares these
//!   settings through [`Ppt::derive`] (the registry's `derive`), and the scenario applies
//!   them where `[network]` is silent. See "Scenario settings" below.
//!
//! # Configuration (`protocol = "ppt"`)
//! | field | default | meaning |
//! |---|---|---|
//! | `send_buffer` | "2GB" | application send buffer (§6.2 uses 2 GB) |
//! | `identification_threshold` | "100KB" | first write above this = large flow (Table 3) |
//! | `thresholds` | PIAS's default for the workload, first 3 (web search: [67160, 1582640, 2506820] B) | demotion of unidentified flows P0->P1->P2->P3 |
//! | `alpha_window` | 0 | rounds over which alpha_min is taken (case 2); 0 = every round since start-up |
//! | `lcp_idle_rtts` | 2 | RTTs without LP ACK that end a loop |
//! | `lcp` | true | false: plain DCTCP + scheduling, no opportunistic packets |
//! | `case2` | true | false: no case-2 loops (case 1 only; a diagnostic, not in the paper) |
//! | `lcp_ecn` | true | false: LCP packets not ECN-capable ("w/o LCP ECN", Fig. 15) |
//! | `ewd` | true | false: "w/o EWD" (Fig. 16), see below |
//! | `scheduling` | true | false: every HCP packet in P0, every LCP packet in P4 (Fig. 17) |
//! | `identification` | true | false: no flow is identified large (Fig. 18) |
//! | `hypothetical` | false | the "hypothetical DCTCP" of §2.3, see below |
//! | `hypothetical_fill` | 1.0 | the hypothetical DCTCP fills each round up to this fraction of MW (§2.3 Fig. 3: 0.5-1.5); positive; an error without `hypothetical = true` |
//! | `lcp_late_acks` | false | true: LP ACKs arriving after the idle rule ended their loop still release a packet (non-ECE), see "LCP ECN" below |
//! | `lcp_rtt` | "hcp" | the RTT of the idle rule: "hcp" = max(base RTT, HCP smoothed RTT) at opening; "lp" = also at least the smoothed LP ACK round trip, see "Which RTT" below |
//! | `lambda_hcp` | 0.17 | Eq. 3's lambda of the HCP classes (used when `[network]` gives no ECN thresholds) |
//! | `lambda_lcp` | 0.1 | Eq. 3's lambda of the LCP classes (same) |
//!
//! plus every `dctcp` field (`init_cwnd`, `min_rto`, `g`, `init_alpha`, ...), same defaults.
//!
//! # PPT over Swift (`protocol = "ppt_swift"`, §6.2 "Working with delay-based transport", Fig. 14)
//! The same dual-loop engine and flow scheduling with Swift ([`crate::transport::swift`]) as
//! the HCP instead of DCTCP. The paper's variant "starts an LCP loop whenever a flow's
//! transmission delay falls below the target delay and closes it when it does not receive
//! ACKs for two consecutive RTTs", and "uses the same flow scheduling method as PPT"; its
//! Swift adjusts the window on the fabric delay only (footnote 7). So:
//! - case 1 is unchanged (I = BDP - initial window at start, one RTT later for identified
//!   large flows);
//! - DCTCP's case-2 condition (alpha at its minimum, Eq. 2) is replaced by: on an HCP ACK at
//!   which the fabric delay *falls* below Swift's fabric target delay (this ACK's delay is
//!   below the target, the previous ACK's was not), if no loop is open and no case-1 loop is
//!   pending, a loop opens ([`crate::transport::lowprio::Case2::Delay`]);
//! - its initial window is I = min(W_max - cwnd, max_mdf x W_max), W_max = the largest window
//!   since the flow started (Swift has no slow start, so no start-up phase is excluded): the
//!   gap between the HCP's window and W_max, which is what PPT §3 says the two loops together
//!   should not exceed ("the window summation of LCP and HCP will not exceed the MW") and what
//!   §2.3 found best to fill, bounded as Eq. 2 bounds it (at most DCTCP's largest cut, 1/2, of
//!   W_max; for Swift its largest cut per RTT, `max_mdf`, 0.5 by default);
//! - EWD, LCP ECN (the LCP classes are marked on port occupancy; HCP packets are not
//!   ECN-capable since Swift ignores ECN), the 2-RTT idle rule, meeting in the middle,
//!   identification and mirror tagging are PPT's.
//!
//! Fields: PPT's (except `alpha_window`, `hypothetical` and `hypothetical_fill`, which are
//! DCTCP-specific; `case2 = false` switches the delay-triggered loops off), every `swift`
//! field, and the TCP fields Swift accepts.
//!
//! Choices the paper leaves open here, and why:
//! - "Falls below" is read as the crossing (above -> below), not every ACK below target.
//!   Swift holds the delay around its target, so about every other ACK is below it while the
//!   bottleneck is busy (a standing queue of target - base RTT). Measured on the reduced
//!   repro/ppt_fig14_swift network (32 hosts, web search, load 0.5), with the gap window:
//!   opening on every below-target ACK made 2.2x the case-2 loops, 2.4x the opportunistic
//!   packets and 1.7x the drops of the crossing rule (overall average FCT 1,741 us against
//!   1,467 us; Swift alone 1,535 us); with I = max_mdf x W_max as well, 426k drops and 4.4k
//!   RTOs against 172k and 2.3k (overall average 2,097 us).
//! - The initial window above (the paper does not state it for this variant). Eq. 2's form
//!   with "no congestion signal" for alpha_min, I = max_mdf x W_max, gave 27% more drops and
//!   a 6% higher overall average FCT than the gap on the same network.
//! - The delay compared is the fabric delay (the paper's Swift reacts to it only).
//!
//! # Scenario settings (the `[network]` table of a PPT scenario)
//! - `priorities = 8` (4 HCP + 4 LCP classes; with fewer classes the halves shrink).
//! - ECN thresholds, by default (neither `ecn_k` nor `ecn_k_per_queue` given): Eq. 3 per
//!   class, K_HCP = `lambda_hcp` x C x RTT for the HCP half and K_LCP = `lambda_lcp` x C x RTT
//!   for the LCP half ([`recommended_ecn_k`]: C = the fastest host rate, RTT = the largest
//!   base RTT; the paper's Eq. 3 assumes one C and one RTT for the network, "we assume they
//!   are fixed values of the network"). The paper's §6.2 simulation instead writes them
//!   explicitly: `ecn_k_per_queue = ["96KB","96KB","96KB","96KB","86KB","86KB","86KB","86KB"]`
//!   with `buffer = "120KB"` (Table 3's testbed: 100 KB / 80 KB); explicit thresholds win. On
//!   that network Eq. 3 gives K_HCP = 7.6 KB and K_LCP = 4.5 KB (BDP 44.5 KB): the paper's own
//!   settings are not Eq. 3's, so the reproductions write them out. `lambda_*` given next to
//!   different explicit thresholds, or `network.ecn_lambda` with PPT, are scenario errors.
//! - The switch: docs/conventions.md's shared per-port buffer with drop-tail admission for every
//!   class, as §6.2 ("a per-port buffer of 120KB") and §3.2 ("all data packets essentially
//!   share the switch buffer") describe. ns-3's strict-priority queue disc (PrioQueueDisc)
//!   has no limit of its own, only per-band child queues with their own limits; the paper
//!   does not say how its ns-3 switches split the 120 KB between classes, so no per-class
//!   limit is modelled (`network.class_buffer` can add one; see repro/ppt_fig12_13).
//!   **Push-out (`network.pushout_classes = [4, 5, 6, 7]`, an explicit scenario option, off
//!   by default):** an HCP packet that finds the shared buffer full evicts the newest queued
//!   opportunistic packets instead of being dropped, so LCP packets use only buffer that the
//!   HCP does not need: §6.3.2's "the high priority traffic almost saturate the switch
//!   buffer ..., leaving little space for low priority opportunistic packets" and Fig. 28's
//!   low-priority queue at a few % of the occupancy. Why it is needed, measured in the
//!   2-to-1 diagnostics of tests/ppt.rs (`diag_fig28_buffer_split`, Fig. 28's setup: 40
//!   Gbps, 120 KB, the same K for every class at 60% / 80% of the buffer; web search at load
//!   0.5, 1500 flows): on drop-tail, opportunistic packets hold 51% / 48% of the average
//!   bottleneck occupancy (15.5 of 30.3 KB / 16.0 of 33.6 KB; paper: 2.6-3.1%) because an
//!   LCP packet admitted below K then waits behind every HCP packet (mean LP round trip
//!   0.4-0.5 ms against a ~9 us base RTT) and HCP arrivals overflow the rest: PPT drops
//!   28,947 / 85,867 packets against DCTCP's 9,555 / 16,435 and is worse than DCTCP overall
//!   (897 / 1,023 vs 817 / 840 us). With push-out of the LCP classes: LCP share 26.7% / 17.3%,
//!   drops 17,063 / 22,826, overall 780 / 769 us, small-flow average 34 / 47 us (DCTCP
//!   122 / 138), p99 1,038 / 1,049 us (DCTCP 2,457 / 2,458). Push-out of every lower class
//!   (HCP classes too) gave 13 us / 31 us small-flow average / p99, but that also lets a
//!   small flow's HCP evict a large flow's, which is flow scheduling, not the LCP's buffer
//!   share; only the LCP classes are listed. Alternatives considered: a per-class admission
//!   limit (`network.class_buffer`, RC3's appendix-D variant) caps the LCP's share even when
//!   the buffer is idle, and a threshold has to be chosen (a tuning knob the paper does not
//!   give); push-out has no parameter. The reproductions keep the drop-tail rows as the
//!   main ones and add push-out rows, labelled (repro/ppt_*/README.md). Full size, push-out
//!   against drop-tail PPT: Fig. 12 web search overall 1,339 -> 1,170 us, small-flow average
//!   126 -> 73 us (DCTCP 1,401 / 148); Fig. 23 incast 37-111% worse than DCTCP -> between
//!   6.4% worse and 9.4% better (the paper's "similar"); PPT over Swift (Fig. 14) then beats
//!   Swift on all four metrics. But with push-out "w/o EWD" no longer hurts (Fig. 16 is
//!   reproduced only on drop-tail): the switch does the protecting that EWD does.
//! - **LCP ECN (Fig. 15) cannot act in our model**, measured in `diag_lcp_ecn_ablation`
//!   (2-to-1, K 96 / 86 KB on 120 KB, LCP on port occupancy): 21-30% of the opportunistic
//!   packets arrive CE-marked (the buffer held > 86 KB), but those are exactly the packets
//!   that then wait behind the HCP, so their LP ACKs return after the idle rule has ended
//!   the loop: of 4,509-5,045 LP ACKs, 1,950-2,308 arrive while their loop is open and only
//!   15-19 of those carry ECE; 574-717 of the 2,559-2,737 late ones do. 90-93% of opportunistic packets are
//!   initial-window packets, paced out within one RTT, before any LP ACK can return, and a
//!   loop sends at most 2x its window under EWD, so ECE (which only withholds releases) has
//!   nothing to act on: "w/o LCP ECN" changes FCTs by < 1%. With push-out, the same.
//!   `lcp_late_acks = true` (default false) tests the reading of §3.2 / §5.2 in which every
//!   non-ECE LP ACK releases a packet even after the idle rule ended the loop
//!   (`tcp_ack_loops` does not mention the loop state): late ACKs then release 284-1,040
//!   packets, ECE withholds 500-870 releases, and FCTs still move by < 2% either way. We
//!   found no reading of §3 under which a loop's sending is not bounded by EWD and the idle
//!   rule, which is what the paper's "w/o ECN, PPT's LCP loop may perceive congestion after
//!   packet loss, thus aggressively injecting LCP packets" would need.
//! - `ecn_port_classes = [4, 5, 6, 7]` (the default for PPT when `[network]` does not list
//!   any): the LCP classes compare their K with the whole port's buffer occupancy, as §3.2 marks low-priority packets on *buffer occupancy*
//!   ("all data packets essentially share the switch buffer"), while the HCP classes 0-3 keep
//!   per-queue marking (DCTCP's K on its own queue). Leave `ecn_per_port = false`. (In the
//!   2-to-1 test of tests/ppt.rs, with the other fixes in place, per-queue LCP marking gives
//!   about the same drops; the setting is kept because it is what §3.2 describes.)
//!
//! # Choices where the paper leaves room
//! - "alpha takes the minimum value alpha_min in the past RTTs": alpha sampled at the end of
//!   each HCP round; the loop opens when the current sample is <= every sample since
//!   start-up ended, the same span as W_max's ("the maximum value of the congestion windows
//!   the flow experienced in past RTTs"). §5.1's "the minimal alpha in the past few RTTs"
//!   allows a short window instead (`alpha_window = 1..32`; it was 8 rounds until this
//!   version). Measured in the 2-to-1 test of tests/ppt.rs (`diag_two_to_one`, 10 Gbps,
//!   1500 web-search flows): with the last 8 rounds, case-2 loops opened 2,959 times and made
//!   57% of all opportunistic packets, almost all when the HCP queue had rebuilt (DCTCP's
//!   alpha, an average over rounds, is lowest at the end of the unmarked stretch of a
//!   sawtooth, i.e. when the queue is back near K, not right after the cut); opportunistic
//!   packets then waited behind HCP packets for 1.3 ms on average (base RTT 37 us) and held
//!   16 KB of a 26 KB average occupancy. With the minimum since start-up: 968 case-2 loops,
//!   drops 24,776 -> 10,121 (DCTCP 1,176), timeouts 325 -> 131 (DCTCP 78), small-flow
//!   average FCT 120 -> 92 us (DCTCP 260), overall 2,976 -> 2,936 us (DCTCP 3,046).
//!   With every change of this version (this one, the gap bound, W_max from the first round
//!   after start-up, the delayed case-1 opening at the first ACK), against the previous
//!   version: drops 23,643 -> 4,507, timeouts 404 -> 98, small-flow average 148 -> 88 us,
//!   p99 1,256 -> 1,154 us, overall 3,004 -> 2,928 us; opportunistic packets 63,048 ->
//!   30,544, of which case 2 36,098 -> 6,380. Still left: opportunistic packets of large
//!   flows (P7) wait behind HCP packets for ~1.1 ms (LP ACK round trip) and hold ~10 KB of
//!   the ~19 KB average occupancy; the paper's Fig. 28 shows its low-priority queue at
//!   ~3% of occupancy, which our shared drop-tail strict-priority port does not give.
//! - The gap bound on case 2's I (see above) is the paper's stated invariant, not an extra
//!   mechanism; it also keeps the first round after start-up (whose windows still hold the
//!   reduction) out of W_max, so a loop needs a real cut below W_max. Its measured effect
//!   alone (2-to-1, window of 8 rounds): small-flow average 147 -> 120 us, drops unchanged.
//! - **One case-2 loop per congestion episode.** Taken literally, "alpha <= min over the last
//!   rounds" holds in every unmarked round after a cut (alpha only decays), so a loop would
//!   reopen every few RTTs, each pacing a full (1/2 - alpha_min) x W_max window whatever the
//!   ECN state. §3.1 describes case 2 as the spare bandwidth a window cut leaves in the queue
//!   buildup phase (one loop per sawtooth), so a congestion episode starts at the end of
//!   start-up and at every round whose alpha sample is above the previous one (alpha rose:
//!   the round saw marks), and at most one case-2 loop opens per episode (the first round
//!   afterwards in which alpha is back at its minimum).
//! - ECE on an LP ACK cancels the rest of the paced initial window (not only the ACK's own
//!   release); the loop stays open (later non-ECE LP ACKs still release packets under EWD)
//!   and ends by the 2-RTT idle rule.
//! - Meeting in the middle: the LCP's known-delivered ranges are given to the HCP as
//!   *skip* ranges ([`crate::transport::tcp::TcpSender::note_delivered`]), not as SACK
//!   blocks: the HCP does not send them and does not count them in flight, but RFC 6675's
//!   IsLost only counts real SACKs, so LCP data far ahead of snd_nxt no longer makes the
//!   HCP's outstanding data look lost (before: 5.6% of bytes retransmitted by the HCP in the
//!   2-to-1 test against ~0.4% real loss). All ranges are handed over as soon as known.
//! - Case 1's delayed opening for large flows ("delay the LCP loop initialization to the 2nd
//!   RTT"): the 2nd RTT of a window-based flow begins when its first window's ACKs return, so
//!   the loop opens at the first HCP ACK (until this version: a timer one base RTT after the
//!   start, which under incast fired long before any ACK, into a full buffer). If that ACK
//!   already made DCTCP cut its window (ssthresh finite), the flow is past start-up and no
//!   case-1 loop opens; case 2 takes over. Measured (2-to-1 test): drops 6,182 -> 4,507,
//!   timeouts 121 -> 98; incast: see repro/ppt_fig23_incast. The delayed loop's initial
//!   window is BDP minus the window the HCP sends in that 2nd round (twice the initial
//!   window, as slow start doubles it; a Swift HCP's own window), not §3.1's BDP - initial
//!   window: that value is the first round's gap, and in the 2nd round it would make the two
//!   loops send BDP + initial window, above the MW that §3 says their sum must not exceed.
//! - "w/o EWD" (§6.3: "does not use EWD and instead sends opportunistic packets at line rate
//!   once the LCP loop is opened"): once a loop opens (same triggers, I > 0), opportunistic
//!   packets leave at the host's line rate until the loop closes, by the 2-RTT idle rule,
//!   when the tail meets the HCP, or when an LP ACK with ECE arrives (ECN still applies:
//!   it suspends sending, §6.1.2); LP ACKs release nothing extra. Until this version the
//!   variant sent the initial window at once and then one packet per packet acknowledged
//!   (a constant window, RC3's clocking); that reading hardly differed from PPT (2-to-1:
//!   overall 2,978 vs 3,004 us) because 95% of opportunistic packets were initial-window
//!   packets either way. Line rate, 2-to-1: overall 3,566 vs 2,936 us, small-flow average
//!   520 vs 92 us, drops 65,968 vs 10,121 (paper Fig. 16: 26% overall, 63.5% / 85.8% small
//!   average / p99).
//! - "w/o LCP ECN": opportunistic packets are Not-ECT, so LP ACKs never carry ECE; the loop
//!   learns of congestion only through loss (missing LP ACKs).
//! - Mirror tagging demotes by the bytes the flow has sent in both loops (the LCP's bytes
//!   are bytes sent too); with the default 2 GB buffer every flow above 100 KB is identified,
//!   so the thresholds only act on flows below the identification threshold or with a small
//!   buffer. Default thresholds: the first three (half the classes minus one) of PIAS's
//!   default for the scenario's workload (`pias::default_thresholds`: the PIAS authors' sets
//!   for web search, 46 / 1084 / 1717 packets of 1460 B, and for data mining at their loads,
//!   otherwise our model of PIAS §3.2; see pias.rs).
//! - "Hypothetical DCTCP" (§2.3): the paper records each flow's maximum window (MW) in a
//!   previous DCTCP run and then fills the gap to MW every RTT with opportunistic packets. A
//!   single run cannot know MW in advance; `hypothetical = true` uses MW = max(path BDP,
//!   largest cwnd so far) and, at the end of every HCP round, sends MW - cwnd opportunistic
//!   packets paced over the next round (no ECN reaction, no EWD, no scheduling: HCP in P0,
//!   LCP in P4). The flow's first round (at its start) is the same rule with cwnd = the
//!   initial window and MW = max(BDP, initial window), i.e. case 1's BDP - initial window.
//!   **Fig. 3's fill fraction** (`hypothetical_fill = f`, default 1.0): "different window
//!   sizes to be filled by the opportunistic packets, varying from 50% to 150% of the MW".
//!   Read as: each round (the first included) tops the flow up to f x MW, i.e. sends
//!   f x MW - cwnd opportunistic bytes (rounded to whole packets as every loop's window is),
//!   nothing when f x MW <= cwnd; MW itself is unchanged (it stays the HCP's own largest
//!   window, floored at the BDP, never counting opportunistic packets). At f = 1.0 the code
//!   path computes exactly what it did before the option existed (byte-identical runs).
//!   Two consequences of MW being a running maximum rather than the paper's recorded one:
//!   (1) with f < 1 a flow in slow start gets opportunistic packets only while its window
//!   is below f x BDP (at f = 0.5 the first two rounds on the 44 KB cross-spine BDP of
//!   §6.2's 40/100G leaf-spine, none on its ~23 KB same-leaf paths), where the paper's flow
//!   would fill to f x its final MW from its first round; (2) with f > 1 the gap
//!   (f - 1) x MW never closes, since the HCP's growth raises MW with it: every round of
//!   every flow sends at least (f - 1) x MW extra, as in the paper (there, too, the HCP can
//!   never reach f x MW, since f x MW exceeds any window it had). Giving
//!   `hypothetical_fill` without `hypothetical = true` is a scenario error rather than
//!   ignored, so a sweep cannot silently run plain PPT under a fill label.
//! - **Which RTT** paces the initial window and times the idle rule, and what a late LP ACK
//!   does. The paper's text (seed 000, read for this version):
//!   - §3.2 pacing: "the sender paces the initial sending rate of opportunistic packets to the
//!     initial window divided by RTT, i.e., I/RTT"; idle rule: "terminate the current LCP loop
//!     if the sender has not received low-priority ACKs for 2 RTTs and start to discover
//!     spare bandwidth again to initialize a new LCP loop"; §6.2's Swift variant "closes it
//!     when it does not receive ACKs for two consecutive RTTs". None of these says which RTT.
//!     The only RTT the design section defines is Eq. 3's "C and RTT are the link speed and
//!     the base round-trip time"; case 1's I is "BDP" (§5.1 "For new flows, the initial window
//!     is BDP"), i.e. link rate x base RTT, so I/RTT over the base RTT paces at about the
//!     spare rate the window was sized for.
//!   - §5.2 lists what the kernel does with an LP ACK (`tcp_ack_loops`): release one packet
//!     if no ECE, "otherwise, we do nothing", and update the SACK scoreboard
//!     (`tcp_sacktag_write_queue`). No RTT update is listed, so a kernel timer in "RTTs" would
//!     most plausibly read the socket's smoothed RTT, which HCP ACKs feed (an inference: §5
//!     gives no timer code). Our reading, max(base RTT, HCP smoothed RTT) taken when the loop
//!     opens, is that; the base RTT alone would only shorten the timer.
//!   - Late LP ACKs: §3.2 "Upon receiving a low-priority ACK, the sender sends an
//!     opportunistic data packet" and §5.2's `tcp_ack_loops` check no loop state, while §3.2's
//!     "terminate the current LCP loop" does not say whether a terminated loop still answers
//!     ACKs; what termination is said to do is let the sender "initialize a new LCP loop"
//!     (case 1 / case 2 triggers). No text re-opens a loop on an ACK. So: no re-opening in any
//!     mode; release on a late ACK is `lcp_late_acks` (default false: both readings fit the
//!     text, and the release-on-late-ACK one is not better supported).
//!   - The alternative RTT, `lcp_rtt = "lp"`: the idle rule counts in the loop's own measured
//!     round trip (smoothed LP ACK round trip over the flow's loops, gain 1/8, updated on
//!     every LP ACK including late ones; idle length = 2 x max(RTT at opening, that)). It is
//!     the reading in which "2 RTTs without LP ACKs" detects lost opportunistic packets rather
//!     than queued ones (in our strict-priority switch an LP round trip is 0.4-1.2 ms against
//!     a 9-37 us base RTT). Not the default: the text gives it no support beyond plausibility,
//!     and it changes nothing measurable: a flow's first loop (most opportunistic packets are
//!     case-1 initial windows) has no LP sample yet and still ends after 2 HCP RTTs.
//!     Measured in `diag_lcp_ecn_ablation` (2-to-1, 1500 flows): with `lcp_rtt = "lp"`, ECE
//!     reaches open loops 94 / 49 times (10G / 40G; 15 / 19 before), about half the LP ACKs
//!     still arrive after their loop ended (2,644 of 5,047 / 2,550 of 4,540), and PPT vs
//!     "w/o LCP ECN" is 3,367 vs 3,375 us (10G) and 1,028 vs 1,027 us (40G) overall, small-flow
//!     average 482 vs 452 / 211 vs 210 us; on push-out switches identical to < 1%. On the
//!     reduced Fig. 15 network (32 hosts, 3000 flows, seeds 1-3) PPT's gain over the variant
//!     is 0.4 / -1.6 / 1.2% overall and -1.3 / 10.9 / 4.7% on the small-flow average, at full
//!     size (seed 1) 1.3% overall and -6.3% on the small-flow average. `lcp_late_acks` alone
//!     or with it: the sign of the gain changes between seeds too (reduced seeds 1-8, full
//!     size seeds 1-3); repro/ppt_ablations/README.md has every run.

use crate::packet::{FlowId, Packet};
use crate::transport::lowprio::{
    Case2, DualLoop, DualParams, DualView, LpParams, LpStats, OpenPolicy, Release, Tagging,
};
use crate::transport::swift;
use crate::transport::tagging::{check_thresholds, split_table, ExtConfigError, Mlfq};
use crate::transport::tcp::TcpConfig;
use crate::transport::{Ctx, FlowStats, NetInfo, Transport};
use crate::units::Bytes;
use serde::Deserialize;

/// Errors of the `ppt` table.
pub type PptConfigError = ExtConfigError;

/// Eq. 3's lambda for HCP queues (DCTCP's 0.17).
pub const LAMBDA_HCP: f64 = 0.17;
/// Eq. 3's lambda for LCP queues.
pub const LAMBDA_LCP: f64 = 0.1;

/// Per-class ECN thresholds for a PPT scenario's `[network] ecn_k_per_queue` (Eq. 3):
/// K = lambda x C x RTT with C the fastest host rate and RTT the largest base RTT; the first
/// half of the classes (HCP) uses `lambda_hcp`, the second half (LCP) `lambda_lcp`.
pub fn recommended_ecn_k(net: &NetInfo, lambda_hcp: f64, lambda_lcp: f64) -> Vec<Bytes> {
    let bdp = net.max_host_rate.bdp(net.max_base_rtt).0 as f64;
    let classes = net.priorities.clamp(1, 8);
    let half = (classes / 2).max(1);
    (0..classes)
        .map(|c| {
            let l = if c < half { lambda_hcp } else { lambda_lcp };
            Bytes((bdp * l).round() as u64)
        })
        .collect()
}

#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
struct PptOwn {
    send_buffer: Bytes,
    identification_threshold: Bytes,
    thresholds: Vec<Bytes>,
    alpha_window: usize,
    lcp_idle_rtts: u32,
    lcp: bool,
    case2: bool,
    lcp_ecn: bool,
    ewd: bool,
    scheduling: bool,
    identification: bool,
    hypothetical: bool,
    hypothetical_fill: f64,
    lcp_late_acks: bool,
    lcp_rtt: LcpRtt,
    lambda_hcp: f64,
    lambda_lcp: f64,
}

/// Which RTT the idle rule ("2 RTTs without low-priority ACKs") counts in (`lcp_rtt`).
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum LcpRtt {
    /// max(base RTT, HCP smoothed RTT), taken when the loop opens.
    Hcp,
    /// max(that, the smoothed LP ACK round trip of the flow's loops), updated per LP ACK.
    Lp,
}

impl Default for PptOwn {
    fn default() -> Self {
        PptOwn {
            send_buffer: Bytes(2_000_000_000),
            identification_threshold: Bytes(100_000),
            thresholds: Vec::new(), // not given: resolved from the workload in `build`
            alpha_window: 0,
            lcp_idle_rtts: 2,
            lcp: true,
            case2: true,
            lcp_ecn: true,
            ewd: true,
            scheduling: true,
            identification: true,
            hypothetical: false,
            hypothetical_fill: 1.0,
            lcp_late_acks: false,
            lcp_rtt: LcpRtt::Hcp,
            lambda_hcp: LAMBDA_HCP,
            lambda_lcp: LAMBDA_LCP,
        }
    }
}

/// PPT for every host of a run.
pub struct Ppt {
    inner: DualLoop,
}

impl Ppt {
    pub const FIELDS: &'static [&'static str] = &[
        "send_buffer",
        "identification_threshold",
        "thresholds",
        "alpha_window",
        "lcp_idle_rtts",
        "lcp",
        "case2",
        "lcp_ecn",
        "ewd",
        "scheduling",
        "identification",
        "hypothetical",
        "hypothetical_fill",
        "lcp_late_acks",
        "lcp_rtt",
        "lambda_hcp",
        "lambda_lcp",
    ];

    /// `ppt_swift`'s own fields: PPT's, except the DCTCP-specific `alpha_window`,
    /// `hypothetical` and `hypothetical_fill`, plus Swift's ([`swift::FIELDS`]).
    pub const FIELDS_SWIFT: &'static [&'static str] = &[
        "send_buffer",
        "identification_threshold",
        "thresholds",
        "lcp_idle_rtts",
        "lcp",
        "case2",
        "lcp_ecn",
        "ewd",
        "scheduling",
        "identification",
        "lcp_late_acks",
        "lcp_rtt",
        "lambda_hcp",
        "lambda_lcp",
    ];

    /// PPT over DCTCP (`protocol = "ppt"`).
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Ppt, PptConfigError> {
        Self::build(cfg, net, false)
    }

    /// PPT over Swift (`protocol = "ppt_swift"`, PPT §6.2 Fig. 14).
    pub fn from_config_swift(cfg: &serde_json::Value, net: &NetInfo) -> Result<Ppt, PptConfigError> {
        Self::build(cfg, net, true)
    }

    /// Split a `ppt` / `ppt_swift` table into (PPT's own fields parsed, the same as a table,
    /// the TCP fields, Swift's fields).
    fn parse_own(
        cfg: &serde_json::Value,
        over_swift: bool,
    ) -> Result<(PptOwn, serde_json::Value, serde_json::Value, serde_json::Value), PptConfigError> {
        let (own, tcp, swift_own) = if over_swift {
            let fields: Vec<&str> = Self::FIELDS_SWIFT.iter().chain(swift::FIELDS).copied().collect();
            let (own, tcp) = split_table(cfg, "ppt_swift", &fields)?;
            let (mut mine, mut sw) = (serde_json::Map::new(), serde_json::Map::new());
            if let serde_json::Value::Object(m) = own {
                for (k, v) in m {
                    if swift::FIELDS.contains(&k.as_str()) {
                        sw.insert(k, v);
                    } else {
                        mine.insert(k, v);
                    }
                }
            }
            (serde_json::Value::Object(mine), tcp, serde_json::Value::Object(sw))
        } else {
            let (own, tcp) = split_table(cfg, "ppt", Self::FIELDS)?;
            (own, tcp, serde_json::Value::Null)
        };
        let o: PptOwn = crate::config::from_table(&own, "transport")?;
        for (field, l) in [("lambda_hcp", o.lambda_hcp), ("lambda_lcp", o.lambda_lcp)] {
            if !(l > 0.0 && l.is_finite()) {
                return Err(ExtConfigError::OutOfRange {
                    field: field.into(),
                    value: l.to_string(),
                    fix:
                        "Eq. 3's lambda must be a positive number (the paper: 0.17 for HCP queues, 0.1 for LCP queues)"
                            .into(),
                });
            }
        }
        Ok((o, own, tcp, swift_own))
    }

    /// The switch settings PPT prescribes (§3.2, Eq. 3), for a scenario whose `[network]`
    /// leaves them out: per-class ECN thresholds K = lambda x C x RTT ([`recommended_ecn_k`]
    /// with `lambda_hcp` for the HCP half of the classes and `lambda_lcp` for the LCP half)
    /// and the LCP classes marked on the port's buffer occupancy (`ecn_port_classes`).
    /// `ecn_from` lists the `lambda_*` keys the table gives explicitly: they only act through
    /// this default, so the scenario rejects them next to explicit network thresholds.
    pub fn derive(
        cfg: &serde_json::Value,
        net: &NetInfo,
        over_swift: bool,
    ) -> Result<crate::transport::Derived, PptConfigError> {
        let (o, own, _, _) = Self::parse_own(cfg, over_swift)?;
        let classes = net.priorities.clamp(1, 8);
        let half = (classes / 2).max(1);
        let mut transport = serde_json::Map::new();
        if own.get("thresholds").is_none() {
            transport.insert(
                "thresholds".into(),
                serde_json::json!(Self::default_thresholds(net).into_iter().map(Bytes).collect::<Vec<_>>()),
            );
        }
        Ok(crate::transport::Derived {
            transport,
            ecn_k_per_queue: Some(recommended_ecn_k(net, o.lambda_hcp, o.lambda_lcp)),
            ecn_port_classes: Some((half..classes).collect()),
            lp_classes: (half..classes).collect(),
            ecn_from: ["lambda_hcp", "lambda_lcp"]
                .into_iter()
                .filter(|k| own.get(*k).is_some())
                .map(|k| format!("transport.{k}"))
                .collect(),
            ..Default::default()
        })
    }

    /// The default `thresholds`: the first (classes / 2 - 1, three with 8 classes) of PIAS's
    /// default for the scenario's workload ([`crate::transport::pias::default_thresholds`]).
    fn default_thresholds(net: &NetInfo) -> Vec<u64> {
        let half = (net.priorities.clamp(1, 8) / 2).max(1);
        let mut t = crate::transport::pias::default_thresholds(net);
        t.truncate((half - 1) as usize);
        t
    }

    fn build(cfg: &serde_json::Value, net: &NetInfo, over_swift: bool) -> Result<Ppt, PptConfigError> {
        let (o, own, tcp, swift_own) = Self::parse_own(cfg, over_swift)?;
        let bad = |field: &str, value: String, fix: &str| ExtConfigError::OutOfRange {
            field: field.into(),
            value,
            fix: fix.into(),
        };
        let classes = net.priorities.clamp(1, 8);
        if classes < 2 && o.lcp {
            return Err(bad(
                "lcp",
                "true".into(),
                "PPT's low-priority loop needs at least 2 priority classes; raise network.priorities or set lcp = false",
            ));
        }
        let half = (classes / 2).max(1);
        let t: Vec<u64> = if own.get("thresholds").is_some() {
            o.thresholds.iter().map(|b| b.0).collect()
        } else {
            Self::default_thresholds(net)
        };
        check_thresholds("thresholds", &t, (half - 1) as usize)?;
        if o.send_buffer.0 == 0 {
            return Err(bad("send_buffer", "0".into(), "give a positive size, e.g. \"2GB\""));
        }
        if o.alpha_window > 32 {
            return Err(bad(
                "alpha_window",
                o.alpha_window.to_string(),
                "must be 1..32 rounds, or 0 for every round since start-up (8 by default)",
            ));
        }
        if o.lcp_idle_rtts == 0 {
            return Err(bad("lcp_idle_rtts", "0".into(), "must be at least 1 RTT (the paper uses 2)"));
        }
        if !(o.hypothetical_fill > 0.0 && o.hypothetical_fill.is_finite()) {
            return Err(bad(
                "hypothetical_fill",
                o.hypothetical_fill.to_string(),
                "must be a positive number, the fraction of the maximum window (MW) to fill each round (1.0 = the gap to MW; §2.3 Fig. 3 uses 0.5 to 1.5)",
            ));
        }
        if own.get("hypothetical_fill").is_some() && !o.hypothetical {
            return Err(bad(
                "hypothetical_fill",
                o.hypothetical_fill.to_string(),
                "only acts in the hypothetical DCTCP: set transport.hypothetical = true, or remove hypothetical_fill",
            ));
        }
        let tcp = if over_swift {
            swift::resolve(&swift_own, &tcp, net)?
        } else {
            TcpConfig::parse(&tcp)?.resolve(net, true)?
        };
        let hyp = o.hypothetical;
        let lp = LpParams {
            mss: tcp.mss,
            header: tcp.header,
            ctrl_size: tcp.ctrl_size,
            ect: o.lcp_ecn && !hyp,
            react_ece: o.lcp_ecn && !hyp,
            release: if hyp {
                Release::None
            } else if o.ewd {
                Release::Ewd
            } else {
                Release::LineRate
            },
            pace: o.ewd || hyp,
            idle_rtts: o.lcp_idle_rtts,
            ack_every: 2,
            late_acks: o.lcp_late_acks,
            lp_rtt: o.lcp_rtt == LcpRtt::Lp,
        };
        let p = DualParams {
            name: if over_swift { "ppt_swift" } else { "ppt" },
            tcp,
            lp,
            lcp: o.lcp && classes >= 2,
            open: if hyp {
                OpenPolicy::Hypothetical { fill: o.hypothetical_fill }
            } else {
                let case2 = if !o.case2 {
                    Case2::Off
                } else if over_swift {
                    Case2::Delay
                } else {
                    Case2::Alpha { window: o.alpha_window }
                };
                OpenPolicy::Intermittent { case2, delay_large: true }
            },
            tagging: Tagging::Mirror { mlfq: Mlfq::new(t), half, scheduling: o.scheduling && !hyp },
            send_buffer: o.send_buffer.0,
            identify_above: (o.identification && !hyp).then_some(o.identification_threshold.0),
            discard_ce_lp: false,
            ack_prio: 0,
        };
        Ok(Ppt { inner: DualLoop::new(p) })
    }

    /// The engine (per-flow state inspection).
    pub fn engine(&self) -> &DualLoop {
        &self.inner
    }
    pub fn view(&self, flow: FlowId) -> Option<DualView> {
        self.inner.view(flow)
    }
    pub fn lp_stats(&self, flow: FlowId) -> LpStats {
        self.inner.lp_stats(flow)
    }
}

impl Transport for Ppt {
    fn name(&self) -> &'static str {
        self.inner.params().name
    }
    fn start_flow(&mut self, ctx: &mut Ctx, flow: FlowId) {
        self.inner.start_flow_impl(ctx, flow)
    }
    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.inner.on_packet_impl(ctx, pkt)
    }
    fn on_timer(&mut self, ctx: &mut Ctx, token: u64) {
        self.inner.on_timer_impl(ctx, token)
    }
    fn on_tx_complete(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.inner.on_tx_complete_impl(ctx, pkt)
    }
    fn wants_tx_complete(&self) -> bool {
        self.inner.wants_tx_complete_impl()
    }
    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.inner.flow_stats_impl(flow)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::{Ecn, PacketFlags};
    use crate::transport::lowprio::{
        parse_lp_ack, LpCx, LpReceiver, LpSender, KIND_LP_ACK, KIND_LP_DATA, TIMER_LP_IDLE, TIMER_LP_PACE,
    };
    use crate::transport::tcp::KIND_DATA;
    use crate::transport::{untoken, Actions, FlowInfo};
    use crate::units::{Rate, Time};
    use serde_json::json;

    const MSS: u64 = 1460;

    fn net() -> NetInfo {
        NetInfo {
            mtu: Bytes(1500),
            header: Bytes(40),
            ctrl_size: Bytes(64),
            num_nodes: 4,
            max_base_rtt: Time::us(40),
            max_host_rate: Rate::gbps(10),
            priorities: 8,
            size_cdf: None,
            workload: None,
            host: crate::host::HostSpec { tsq: false, ..crate::host::HostSpec::default() },
        }
    }

    fn flow(size: u64, rtt_us: u64) -> FlowInfo {
        FlowInfo {
            id: 0,
            src: 0,
            dst: 1,
            size: Bytes(size),
            start: Time::ZERO,
            base_rtt: Time::us(rtt_us),
            path_rate: Rate::gbps(10),
            host_rate: Rate::gbps(10),
            deadline: None,
            background: false,
        }
    }

    /// An ideal network around one `Ppt`: packets sent in a step arrive at the next step.
    struct H {
        t: Ppt,
        flows: Vec<FlowInfo>,
        now: Time,
        wire: Vec<Packet>,
        timers: Vec<(Time, u64, u32)>,
        /// Every packet sent: (time, packet).
        log: Vec<(Time, Packet)>,
        completions: u32,
    }

    impl H {
        fn new(cfg: serde_json::Value, f: FlowInfo) -> H {
            Self::with(Ppt::from_config(&cfg, &net()).unwrap(), f)
        }
        fn new_swift(cfg: serde_json::Value, f: FlowInfo) -> H {
            Self::with(Ppt::from_config_swift(&cfg, &net()).unwrap(), f)
        }
        fn with(t: Ppt, f: FlowInfo) -> H {
            H {
                t,
                flows: vec![f],
                now: Time::ZERO,
                wire: Vec::new(),
                timers: Vec::new(),
                log: Vec::new(),
                completions: 0,
            }
        }
        fn call(&mut self, host: u32, f: impl FnOnce(&mut Ppt, &mut Ctx)) -> Vec<Packet> {
            let mut out = Actions::new();
            f(&mut self.t, &mut Ctx { now: self.now, host, flows: &self.flows, out: &mut out });
            for &(at, tok) in &out.timers {
                self.timers.push((at, tok, host));
            }
            self.completions += out.completions.len() as u32;
            for p in &out.sends {
                self.log.push((self.now, *p));
            }
            out.sends
        }
        fn start(&mut self) -> Vec<Packet> {
            let s = self.call(0, |t, c| t.start_flow(c, 0));
            self.wire.extend(s.iter().copied());
            s
        }
        fn deliver(&mut self, p: &Packet) -> Vec<Packet> {
            let host = p.dst;
            self.call(host, |t, c| t.on_packet(c, p))
        }
        /// Advance to `at`, firing due timers in order.
        fn advance(&mut self, at: Time) {
            loop {
                self.timers.sort_by_key(|x| x.0);
                match self.timers.first() {
                    Some(&(t, tok, host)) if t <= at => {
                        self.timers.remove(0);
                        self.now = self.now.max(t);
                        let s = self.call(host, |tr, c| tr.on_timer(c, tok));
                        self.wire.extend(s);
                    }
                    _ => break,
                }
            }
            self.now = at;
        }
        /// Deliver everything on the wire at `now + dt` (after due timers).
        fn step(&mut self, dt: Time) {
            let at = self.now + dt;
            self.advance(at);
            let w: Vec<Packet> = std::mem::take(&mut self.wire);
            for p in w {
                let s = self.deliver(&p);
                self.wire.extend(s);
            }
        }
    }

    fn lp_params() -> LpParams {
        LpParams {
            mss: MSS,
            header: 40,
            ctrl_size: 64,
            ect: true,
            react_ece: true,
            release: Release::Ewd,
            pace: true,
            idle_rtts: 2,
            ack_every: 2,
            late_acks: false,
            lp_rtt: false,
        }
    }

    fn lp_ack(r1: (u64, u64), r2: (u64, u64), ece: bool) -> Packet {
        let mut aux2 = (r2.1 - r2.0) as u32;
        if ece {
            aux2 |= crate::transport::lowprio::LP_ACK_ECE;
        }
        Packet { kind: KIND_LP_ACK, seq: r1.0, rank: (r1.1 - r1.0) as u32, aux: r2.0, aux2, ..Packet::default() }
    }

    #[test]
    fn ecn_marked_lp_ack_releases_nothing_plain_one_releases_one() {
        let f = flow(1_000_000, 40);
        let p = lp_params();
        let mut lp = LpSender::new(&f);
        let mut out = Actions::new();
        let mut lx = cx(Time::ZERO, &f, &p, &mut out, 14_600, 1_000_000);
        assert!(lp.open(&mut lx, 10 * MSS, Time::us(40)));
        assert_eq!(out.sends.len(), 1, "paced: one packet now");
        out.clear();
        let mut lx = cx(Time::us(45), &f, &p, &mut out, 14_600, 1_000_000);
        lp.on_ack(&mut lx, &lp_ack((998_540, 1_000_000), (997_080, 998_540), true));
        assert!(out.sends.is_empty(), "ECE: no release");
        assert_eq!(lp.stats().ece_acks, 1);
        let mut lx = cx(Time::us(46), &f, &p, &mut out, 14_600, 1_000_000);
        lp.on_ack(&mut lx, &lp_ack((995_620, 997_080), (994_160, 995_620), false));
        assert_eq!(out.sends.len(), 1, "no ECE: exactly one release");
        let q = out.sends[0];
        assert_eq!(q.kind, KIND_LP_DATA);
        assert!(q.flags.has(PacketFlags::OPPORTUNISTIC) && q.flags.has(PacketFlags::DATA));
        assert_eq!((q.prio, q.ecn), (4, Ecn::Ect));
        // Both ACKs' ranges are known delivered, whatever their ECE.
        assert_eq!(lp.pending_delivered(), &[(994_160, 1_000_000)]);
    }

    /// Per-flow NIC limit (`host.tsq`): with room for two packets left by the HCP, an
    /// unpaced 5-packet window sends two and holds three back; each packet that leaves the
    /// NIC lets one more go; closing the loop forgets what is still held back.
    #[test]
    fn nic_limit_holds_back_lp_releases_until_the_nic_drains() {
        let f = flow(1_000_000, 40);
        let p = LpParams { pace: false, ..lp_params() };
        // The loop starts at the tail: a 1,360 B segment (1,400 B on the wire), then full ones.
        let (tail, wire) = (1_360 + 40, MSS + 40);
        let room = tail + wire;
        let mut lp = LpSender::new(&f);
        let mut out = Actions::new();
        let mut lx = cx(Time::ZERO, &f, &p, &mut out, 14_600, 1_000_000);
        lx.nic_room = room;
        assert!(lp.open(&mut lx, 5 * MSS, Time::us(40)));
        assert_eq!(out.sends.len(), 2, "two fit under the limit");
        assert_eq!((lp.stats().pkts, lp.stats().deferred), (2, 3));
        out.clear();
        let mut lx = cx(Time::us(1), &f, &p, &mut out, 14_600, 1_000_000);
        lx.nic_room = room;
        lp.on_tx_complete(&mut lx, tail);
        assert_eq!(out.sends.len(), 1, "one left the NIC: one more goes");
        // The HCP's own bytes shrink the room: nothing goes although one LP packet left.
        out.clear();
        let mut lx = cx(Time::us(2), &f, &p, &mut out, 14_600, 1_000_000);
        lx.nic_room = wire;
        lp.on_tx_complete(&mut lx, wire);
        assert!(out.sends.is_empty());
        lp.close();
        let mut lx = cx(Time::us(3), &f, &p, &mut out, 14_600, 1_000_000);
        lp.on_tx_complete(&mut lx, wire);
        lp.flush(&mut lx);
        assert!(out.sends.is_empty(), "a closed loop sends nothing held back");
        assert_eq!(lp.stats().pkts, 3);
    }

    /// `lcp_late_acks`: a loop opened at t = 0 (4-packet window paced over a 40 us RTT) gets
    /// no LP ACK, so the idle rule ends it at 80 us. LP ACKs delayed behind HCP packets then
    /// arrive at 500 us and 501 us: by default they release nothing (the loop is closed);
    /// with `late_acks` the plain one releases exactly one packet and the ECE one none, and
    /// the loop stays closed.
    #[test]
    fn late_lp_acks_release_only_with_the_option_and_without_ece() {
        for late in [false, true] {
            let f = flow(1_000_000, 40);
            let mut p = lp_params();
            p.late_acks = late;
            let mut lp = LpSender::new(&f);
            let mut out = Actions::new();
            let mut lx = cx(Time::ZERO, &f, &p, &mut out, 0, 1_000_000);
            assert!(lp.open(&mut lx, 4 * MSS, Time::us(40)));
            let (closed, paced) = drive_lp_timers(&mut lp, &f, &p, out.timers.clone());
            assert_eq!(closed, Some(Time::us(80)), "idle rule: 2 RTTs without an LP ACK");
            assert_eq!(out.sends.len() + paced, 4);
            assert!(!lp.is_open());
            out.clear();
            let mut lx = cx(Time::us(500), &f, &p, &mut out, 0, 1_000_000);
            lp.on_ack(&mut lx, &lp_ack((998_540, 1_000_000), (997_080, 998_540), false));
            assert_eq!(out.sends.len(), late as usize, "plain late LP ACK (late_acks = {late})");
            if late {
                assert_eq!(out.sends[0].seq, (1_000_000 / MSS) * MSS - 4 * MSS, "the segment below the window");
            }
            out.clear();
            let mut lx = cx(Time::us(501), &f, &p, &mut out, 0, 1_000_000);
            lp.on_ack(&mut lx, &lp_ack((995_620, 997_080), (994_160, 995_620), true));
            assert!(out.sends.is_empty(), "an ECE late LP ACK releases nothing");
            assert!(!lp.is_open() && out.timers.is_empty(), "no loop reopens");
            let st = lp.stats();
            assert_eq!((st.late_acks, st.late_ece, st.late_pkts), (2, 1, late as u64));
        }
    }

    /// Opportunistic packets' class in these tests.
    fn p4(_s: u64) -> u8 {
        4
    }

    /// The LP loop's context at `now`: class 4, the HCP's highest byte `floor`, `buf_end`
    /// bytes written into the send buffer.
    fn cx<'a>(now: Time, f: &'a FlowInfo, p: &'a LpParams, out: &'a mut Actions, floor: u64, buf_end: u64) -> LpCx<'a> {
        LpCx { now, flow: f, p, out, floor, buf_end, prio: &p4, nic_room: u64::MAX }
    }

    /// Drive an LpSender's timers (pace, idle) in time order until the loop closes or none is
    /// left; returns the time at which the loop closed, if it did, and the number of packets
    /// the timers released.
    fn drive_lp_timers(
        lp: &mut LpSender,
        f: &FlowInfo,
        p: &LpParams,
        timers: Vec<(Time, u64)>,
    ) -> (Option<Time>, usize) {
        let mut timers = timers;
        let mut out = Actions::new();
        let mut sent = 0;
        while let Some(i) = (0..timers.len()).min_by_key(|&i| timers[i].0) {
            let (at, tok) = timers.remove(i);
            out.clear();
            let (_, k, g) = untoken(tok);
            let mut lx = cx(at, f, p, &mut out, 0, 1_000_000);
            let was_open = lp.is_open();
            lp.on_timer(&mut lx, k, g);
            sent += out.sends.len();
            timers.extend(out.timers.iter().copied());
            if was_open && !lp.is_open() {
                return (Some(at), sent);
            }
        }
        (None, sent)
    }

    /// `lcp_rtt`: the idle rule's RTT. A first loop (opened at 0 with a 40 us RTT, no LP
    /// round trip known yet) ends at 80 us either way. Its LP ACK arrives late, at 300 us,
    /// echoing a send time of 0: the smoothed LP round trip is 300 us (recorded in both
    /// modes). A second loop opens at 1,000 us with the same 40 us RTT: with `lp_rtt` its idle
    /// length is 2 x 300 = 600 us, else 80 us. An LP ACK at 1,010 us with a 5 us round trip
    /// brings the LP estimate to 300 - 300/8 + 5/8 = 263.125 us: with `lp_rtt` the idle length
    /// becomes 526.25 us and, being shorter than the armed check (1,600 us), is re-armed at
    /// 1,010 + 526.25 = 1,536.25 us, where the loop ends; without, it ends at 1,010 + 80 us.
    #[test]
    fn idle_rule_counts_the_lp_round_trip_with_lp_rtt() {
        for lp_rtt in [false, true] {
            let f = flow(1_000_000, 40);
            let mut p = lp_params();
            p.lp_rtt = lp_rtt;
            let mut lp = LpSender::new(&f);
            let mut out = Actions::new();
            let mut lx = cx(Time::ZERO, &f, &p, &mut out, 0, 1_000_000);
            assert!(lp.open(&mut lx, 4 * MSS, Time::us(40)));
            assert_eq!(lp.idle_len(), Time::us(80));
            let closed = drive_lp_timers(&mut lp, &f, &p, out.timers.clone()).0;
            assert_eq!(closed, Some(Time::us(80)), "first loop: no LP round trip known (lp_rtt = {lp_rtt})");
            out.clear();
            let mut ack = lp_ack((998_540, 1_000_000), (997_080, 998_540), false);
            ack.ts = Time::ZERO;
            let mut lx = cx(Time::us(300), &f, &p, &mut out, 0, 1_000_000);
            lp.on_ack(&mut lx, &ack);
            assert_eq!(lp.lp_srtt(), Some(Time::us(300)));
            assert!(out.sends.is_empty() && !lp.is_open(), "late ACK: no release, no reopening by default");
            out.clear();
            let mut lx = cx(Time::us(1_000), &f, &p, &mut out, 0, 1_000_000);
            assert!(lp.open(&mut lx, 4 * MSS, Time::us(40)));
            assert_eq!(lp.idle_len(), if lp_rtt { Time::us(600) } else { Time::us(80) });
            let mut timers = out.timers.clone();
            out.clear();
            let mut ack = lp_ack((992_700, 994_160), (991_240, 992_700), false);
            ack.ts = Time::us(1_005);
            let mut lx = cx(Time::us(1_010), &f, &p, &mut out, 0, 1_000_000);
            lp.on_ack(&mut lx, &ack);
            assert_eq!(lp.lp_srtt(), Some(Time(263_125_000)));
            assert_eq!(out.sends.len(), 1, "an ACK in an open loop releases one packet");
            let want = if lp_rtt { Time(526_250_000) } else { Time::us(80) };
            assert_eq!(lp.idle_len(), want);
            timers.extend(out.timers.iter().copied());
            let closed = drive_lp_timers(&mut lp, &f, &p, timers).0;
            let want = if lp_rtt { Time(1_536_250_000) } else { Time::us(1_090) };
            assert_eq!(closed, Some(want), "second loop ends 2 RTTs after its last LP ACK (lp_rtt = {lp_rtt})");
            assert_eq!(lp.stats().closed_idle, 2);
        }
    }

    #[test]
    fn initial_window_is_paced_over_one_rtt_from_the_tail() {
        let f = flow(1_000_000, 40);
        let p = lp_params();
        let mut lp = LpSender::new(&f);
        let prio = |_s: u64| 5u8;
        let mut out = Actions::new();
        let rtt = Time::us(40);
        let mut lx = LpCx {
            now: Time::ZERO,
            flow: &f,
            p: &p,
            out: &mut out,
            floor: 0,
            buf_end: 1_000_000,
            prio: &prio,
            nic_room: u64::MAX,
        };
        lp.open(&mut lx, 8 * MSS, rtt);
        let mut seqs = vec![out.sends[0].seq];
        let mut times = vec![Time::ZERO];
        while let Some(&(at, tok)) = out.timers.iter().find(|&&(_, t)| untoken(t).1 == TIMER_LP_PACE) {
            let (_, kind, gen) = untoken(tok);
            out.clear();
            let mut lx = LpCx {
                now: at,
                flow: &f,
                p: &p,
                out: &mut out,
                floor: 0,
                buf_end: 1_000_000,
                prio: &prio,
                nic_room: u64::MAX,
            };
            lp.on_timer(&mut lx, kind, gen);
            for s in &out.sends {
                seqs.push(s.seq);
                times.push(at);
            }
        }
        assert_eq!(seqs.len(), 8);
        assert_eq!(seqs[0], (1_000_000 / MSS) * MSS, "the last (partial) segment first");
        assert!(seqs.windows(2).all(|w| w[1] + MSS == w[0]), "backwards by one segment: {seqs:?}");
        assert_eq!(times[7], Time::us(35), "8 packets at RTT/8 = 5 us spacing");
    }

    #[test]
    fn without_ewd_the_loop_sends_at_line_rate_until_ece_or_idle() {
        // "w/o EWD" (Fig. 16): once open, opportunistic packets leave at the host's line rate
        // (10 Gbps: 1500 B every 1.2 us), beyond the initial window, until an ECE LP ACK or
        // the 2-RTT idle rule stops them; a plain LP ACK releases nothing extra.
        let f = flow(10_000_000, 40);
        let mut p = lp_params();
        p.release = Release::LineRate;
        p.pace = false;
        let mut lp = LpSender::new(&f);
        let mut out = Actions::new();
        let rtt = Time::us(40);
        let mut lx = cx(Time::ZERO, &f, &p, &mut out, 0, 10_000_000);
        assert!(lp.open(&mut lx, 4 * MSS, rtt), "a 4-packet initial window opens the loop");
        let mut times = vec![Time::ZERO];
        let pace = |o: &Actions| o.timers.iter().copied().find(|&(_, t)| untoken(t).1 == TIMER_LP_PACE);
        // A small event loop over every LP timer, with one plain LP ACK at 30 us.
        let mut timers: Vec<(Time, u64)> = out.timers.clone();
        let mut acked = false;
        while !timers.is_empty() {
            timers.sort_by_key(|x| x.0);
            let (at, tok) = timers.remove(0);
            if at > Time::us(300) {
                break;
            }
            out.clear();
            if !acked && at >= Time::us(30) {
                let mut lx = cx(at, &f, &p, &mut out, 0, 10_000_000);
                lp.on_ack(&mut lx, &lp_ack((9_998_540, 10_000_000), (9_997_080, 9_998_540), false));
                assert!(out.sends.is_empty(), "no release per ACK without EWD");
                acked = true;
            }
            let (_, k, g) = untoken(tok);
            let mut lx = cx(at, &f, &p, &mut out, 0, 10_000_000);
            lp.on_timer(&mut lx, k, g);
            times.extend(out.sends.iter().map(|_| at));
            timers.extend(out.timers.iter().copied());
        }
        // Idle rule: no LP ACK since 30 us, so the loop ends at 30 + 2 x 40 = 110 us.
        assert!(!lp.is_open());
        let n = times.len();
        assert_eq!(times[1], Time(1_200_000), "one 1500 B packet per 1.2 us");
        assert!(times.windows(2).all(|w| w[1] - w[0] == Time(1_200_000)));
        let last = *times.last().unwrap();
        assert!(last < Time::us(110) && last + Time(1_200_000) >= Time::us(110), "{last:?}");
        assert!(n > 4 * 10, "far beyond the 4-packet initial window: {n} packets");
        // ECE stops the line-rate sending at once.
        let mut lp = LpSender::new(&f);
        out.clear();
        let mut lx = cx(Time::ZERO, &f, &p, &mut out, 0, 10_000_000);
        lp.open(&mut lx, 4 * MSS, rtt);
        let (at, tok) = pace(&out).unwrap();
        out.clear();
        let mut lx = cx(at, &f, &p, &mut out, 0, 10_000_000);
        lp.on_ack(&mut lx, &lp_ack((9_998_540, 10_000_000), (0, 0), true));
        let (_, k, g) = untoken(tok);
        lp.on_timer(&mut lx, k, g);
        assert!(out.sends.is_empty() && pace(&out).is_none(), "ECE: sending suspended");
    }

    #[test]
    fn delayed_case1_loop_opens_at_the_first_ack_unless_the_hcp_has_cut_its_window() {
        // An identified large flow opens its case-1 loop in its 2nd RTT, i.e. at its first HCP
        // ACK (here at 70 us, later than the 40 us base RTT, as under a queue), with
        // I = BDP - the HCP's 2nd-round window. If that ACK carries ECE (DCTCP cuts its window and leaves
        // start-up: the window has reached its maximum, PPT §3.1), no case-1 loop opens.
        for ece in [false, true] {
            let mut h = H::new(json!({}), flow(1_000_000, 40));
            let s = h.start();
            assert!(s.iter().all(|p| p.kind == KIND_DATA), "large: no LCP in the 1st RTT");
            h.wire.clear();
            h.advance(Time::us(60));
            assert!(h.log.iter().all(|(_, p)| p.kind == KIND_DATA), "no LCP before the first ACK");
            let mut d = s[0];
            if ece {
                d.ecn = Ecn::Ce;
            }
            let acks = h.deliver(&d);
            h.advance(Time::us(70));
            for a in acks {
                let out = h.deliver(&a);
                h.wire.extend(out);
            }
            assert_eq!(h.t.engine().hcp(0).unwrap().ssthresh() != u64::MAX, ece, "start-up over iff marked");
            let lp: Vec<Time> = h.log.iter().filter(|(_, p)| p.kind == KIND_LP_DATA).map(|(t, _)| *t).collect();
            if ece {
                assert!(lp.is_empty(), "{lp:?}");
                assert_eq!(h.t.lp_stats(0).loops, 0);
            } else {
                assert_eq!(lp, vec![Time::us(70)], "paced: the first packet at the ACK");
                let lcp = h.t.engine().lcp(0).unwrap();
                // BDP 50 KB minus the HCP's 2nd-round window (2 x 14.6 KB): 20.8 KB, 14
                // packets, so that HCP + LCP stay within the BDP (PPT §3).
                assert_eq!(lcp.stats().pkts + lcp.to_pace(), 14);
            }
            // Later ACKs open no further case-1 loop.
            h.advance(Time::us(500));
            assert!(h.t.lp_stats(0).loops <= 1);
        }
    }

    #[test]
    fn loop_ends_after_two_rtts_without_lp_acks() {
        let f = flow(1_000_000, 40);
        let mut p = lp_params();
        p.pace = false;
        let mut lp = LpSender::new(&f);
        let rtt = Time::us(40);
        let mut out = Actions::new();
        let mut lx = cx(Time::ZERO, &f, &p, &mut out, 0, 1_000_000);
        lp.open(&mut lx, 4 * MSS, rtt);
        let idle = |o: &Actions| o.timers.iter().copied().find(|&(_, t)| untoken(t).1 == TIMER_LP_IDLE).unwrap();
        let (at, tok) = idle(&out);
        assert_eq!(at, Time::us(80));
        // An LP ACK at 60 us postpones the end to 60 + 80 = 140 us.
        out.clear();
        let mut lx = cx(Time::us(60), &f, &p, &mut out, 0, 1_000_000);
        lp.on_ack(&mut lx, &lp_ack((998_540, 1_000_000), (0, 0), false));
        out.clear();
        let (_, k, g) = untoken(tok);
        let mut lx = cx(at, &f, &p, &mut out, 0, 1_000_000);
        lp.on_timer(&mut lx, k, g);
        assert!(lp.is_open(), "an LP ACK came 20 us ago");
        let (at2, tok2) = idle(&out);
        assert_eq!(at2, Time::us(140));
        out.clear();
        let (_, k, g) = untoken(tok2);
        let mut lx = cx(Time::us(139), &f, &p, &mut out, 0, 1_000_000);
        lp.on_timer(&mut lx, k, g);
        assert!(lp.is_open(), "an early (stale-time) firing does not close it");
        let (at3, tok3) = idle(&out);
        let (_, k, g) = untoken(tok3);
        out.clear();
        let mut lx = cx(at3, &f, &p, &mut out, 0, 1_000_000);
        lp.on_timer(&mut lx, k, g);
        assert!(!lp.is_open(), "2 RTTs without LP ACK end the loop");
        // A late LP ACK records its range but releases nothing.
        out.clear();
        let mut lx = cx(Time::us(200), &f, &p, &mut out, 0, 1_000_000);
        lp.on_ack(&mut lx, &lp_ack((995_620, 997_080), (0, 0), false));
        assert!(out.sends.is_empty());
    }

    #[test]
    fn lcp_stops_at_the_hcp_frontier() {
        let f = flow(10 * MSS, 40);
        let mut p = lp_params();
        p.pace = false;
        let mut lp = LpSender::new(&f);
        let mut out = Actions::new();
        let mut lx = cx(Time::ZERO, &f, &p, &mut out, 7 * MSS, 10 * MSS);
        assert!(lp.open(&mut lx, 10 * MSS, Time::us(40)));
        assert_eq!(out.sends.iter().map(|s| s.seq / MSS).collect::<Vec<_>>(), vec![9, 8, 7]);
        assert!(!lp.is_open(), "met the HCP: closed");
    }

    #[test]
    fn receiver_acks_every_second_opportunistic_packet_with_both_ranges() {
        let f = flow(1_000_000, 40);
        let p = lp_params();
        let mut r = LpReceiver::new();
        let d = |seq: u64, ce: bool| Packet {
            kind: KIND_LP_DATA,
            seq,
            payload: MSS as u32,
            prio: 6,
            ecn: if ce { Ecn::Ce } else { Ecn::Ect },
            ..Packet::default()
        };
        assert!(r.on_data(&p, &f, &d(10 * MSS, false), 0).is_none());
        let a = r.on_data(&p, &f, &d(9 * MSS, true), 0).expect("second packet: ACK");
        let (r1, r2, ece) = parse_lp_ack(&a);
        assert_eq!((r1, r2, ece), ((10 * MSS, 11 * MSS), (9 * MSS, 10 * MSS), true));
        assert_eq!((a.kind, a.prio, a.src, a.dst, a.size), (KIND_LP_ACK, 6, 1, 0, 64));
        assert!(r.on_data(&p, &f, &d(8 * MSS, false), 0).is_none());
        let a = r.on_data(&p, &f, &d(7 * MSS, false), 0).unwrap();
        assert!(!parse_lp_ack(&a).2, "ECE state resets per ACK");
        // Through the transport: only every second LP packet produces an LP ACK.
        let mut h = H::new(json!({"identification": false}), flow(1_000_000, 40));
        let sent = h.start();
        let lps: Vec<Packet> = sent.iter().copied().filter(|p| p.kind == KIND_LP_DATA).collect();
        assert!(!lps.is_empty());
        let mut all_lp = lps.clone();
        h.advance(Time::us(40));
        all_lp.extend(h.wire.iter().copied().filter(|p| p.kind == KIND_LP_DATA));
        assert!(all_lp.len() >= 4, "{}", all_lp.len());
        let mut n_acks = Vec::new();
        for p in &all_lp[..4] {
            n_acks.push(h.deliver(p).iter().filter(|a| a.kind == KIND_LP_ACK).count());
        }
        assert_eq!(n_acks, vec![0, 1, 0, 1]);
    }

    #[test]
    fn large_first_write_tags_p3_p7_small_flows_start_at_p0_p4() {
        // Large: 1 MB with the default 2 GB buffer (first write 1 MB > 100 KB).
        let mut h = H::new(json!({}), flow(1_000_000, 40));
        let s = h.start();
        assert!(s.iter().all(|p| p.kind == KIND_DATA && p.prio == 3), "large: P3, LCP delayed to the 2nd RTT");
        assert!(h.t.view(0).unwrap().large);
        h.step(Time::us(20)); // data arrives
        h.step(Time::us(20)); // ACKs arrive at 40 us: the 2nd RTT, the LCP opens
        let lp: Vec<Packet> = h.wire.iter().copied().filter(|p| p.kind == KIND_LP_DATA).collect();
        assert!(!lp.is_empty() && lp.iter().all(|p| p.prio == 7), "LCP of a large flow: P7");
        // A small first write (send buffer 64 KB < threshold 100 KB): unidentified, P0 / P4.
        let mut h = H::new(json!({"send_buffer": "64KB"}), flow(1_000_000, 40));
        let s = h.start();
        assert!(!h.t.view(0).unwrap().large);
        assert!(s.iter().filter(|p| p.kind == KIND_DATA).all(|p| p.prio == 0));
        assert!(s.iter().filter(|p| p.kind == KIND_LP_DATA).all(|p| p.prio == 4));
        // The LCP tail is the end of the buffered data (64 KB), not the end of the flow.
        let top = s.iter().filter(|p| p.kind == KIND_LP_DATA).map(|p| p.seq + p.payload as u64).max().unwrap();
        assert_eq!(top, (64_000 / MSS) * MSS);
        // Demotion in step: thresholds [4 pkts, 8 pkts, 12 pkts] of bytes sent by both loops.
        let th: Vec<Bytes> = [4, 8, 12].iter().map(|k| Bytes(k * MSS)).collect();
        let cfg = json!({"identification": false, "thresholds": th, "init_cwnd": 2});
        let mut h = H::new(cfg, flow(100 * MSS, 40));
        h.start();
        let mut guard = 0;
        while h.completions == 0 && guard < 200 {
            h.step(Time::us(20));
            guard += 1;
        }
        assert_eq!(h.completions, 1);
        let mut sent = 0u64;
        for (_, p) in h.log.iter().filter(|(_, p)| p.is_data()) {
            let cls = (sent / (4 * MSS)).min(3) as u8;
            let want = if p.kind == KIND_LP_DATA { cls + 4 } else { cls };
            assert!(
                p.prio == want || p.prio + 1 == want,
                "packet {} in P{} after {sent} B (want P{want})",
                p.seq,
                p.prio
            );
            sent += p.payload as u64;
        }
        assert!(h.log.iter().any(|(_, p)| p.prio == 3) && h.log.iter().any(|(_, p)| p.prio == 0));
    }

    /// Drive one flow with 5 us steps (RTT 10 us), marking CE on every data packet on the wire
    /// during the steps for which `mark(step)` is true; stop at the first case-2 loop.
    /// Returns (step of the opening, state then, initial window in packets, alpha samples seen
    /// after start-up ended).
    fn run_until_case2(
        cfg: serde_json::Value,
        steps: usize,
        mark: impl Fn(usize) -> bool,
    ) -> Option<(usize, DualView, u64, Vec<f64>)> {
        let mut h = H::new(cfg, flow(1_000_000_000, 10));
        h.start();
        assert_eq!(h.t.lp_stats(0).loops, 0, "BDP 12.5 KB < initial window: no case-1 loop");
        let mut alphas = Vec::new();
        for i in 0..steps {
            if mark(i) {
                for p in h.wire.iter_mut().filter(|p| p.kind == KIND_DATA) {
                    p.ecn = Ecn::Ce;
                }
            }
            let before = h.t.lp_stats(0).pkts;
            h.step(Time::us(5));
            let v = h.t.view(0).unwrap();
            if v.lp.case2_loops > 0 {
                let lcp = h.t.engine().lcp(0).unwrap();
                return Some((i, v, lcp.stats().pkts - before + lcp.to_pace(), alphas));
            }
            if v.startup_over {
                alphas.push(v.alpha);
            }
        }
        None
    }

    #[test]
    fn case2_window_is_eq2_within_the_gap_to_w_max() {
        // A tiny g keeps alpha at its initial value. Marks at step 0 end start-up (first cut);
        // W_max then only counts windows after that cut, so while cwnd grows the gap
        // W_max - cwnd is 0 and no case-2 loop opens, whatever Eq. 2 says.
        let never_again = |i: usize| i == 0;
        for init_alpha in [0.1, 0.45] {
            let cfg = json!({"init_alpha": init_alpha, "g": 1e-6, "alpha_window": 1});
            let r = run_until_case2(cfg, 200, never_again);
            assert!(r.is_none(), "alpha {init_alpha}: no gap, no loop: {:?}", r.map(|x| (x.0, x.1, x.2)));
        }
        // A second cut at step 100 (cwnd x (1 - alpha/2)) opens a gap. With alpha = 0.1 the
        // gap (alpha/2 = 5% of W_max) is below Eq. 2's (1/2 - 0.1) = 40% of W_max: I = the gap.
        // With alpha = 0.45, Eq. 2's 5% is below the gap (22.5%): I = Eq. 2.
        for init_alpha in [0.1, 0.45] {
            let cfg = json!({"init_alpha": init_alpha, "g": 1e-6, "alpha_window": 1});
            let (i, v, pkts, _) = run_until_case2(cfg, 400, |i| i == 0 || i == 100).expect("a loop after the 2nd cut");
            assert!(i > 100, "opened at step {i}");
            let eq2 = ((0.5 - v.alpha) * v.w_max as f64) as u64;
            let gap = v.w_max - v.cwnd;
            let want = eq2.min(gap);
            if init_alpha < 0.2 {
                assert!(gap < eq2, "{v:?}");
            } else {
                assert!(eq2 < gap, "{v:?}");
            }
            assert_eq!(
                pkts,
                (want + MSS / 2) / MSS,
                "alpha {init_alpha}: I = min(Eq. 2, W_max - cwnd) = {want} B, {v:?}"
            );
        }
    }

    #[test]
    fn case2_waits_for_alpha_to_reach_its_minimum_since_start_up() {
        // A large initial window (200 packets) so that regrowth (1 packet per round) does not
        // close the gap before alpha has decayed. Start-up ends at step 0; 40 unmarked steps
        // let alpha decay (g = 1/16); marks on every packet for steps 40..52 raise alpha and
        // cut the window. The loop opens only once alpha is back at the lowest value it had
        // since start-up (with the minimum over the last 8 rounds it opened 8 rounds = 16
        // steps after the marks, at alpha well above that).
        let mark = |i: usize| i == 0 || (40..52).contains(&i);
        let cfg = json!({"init_alpha": 0.5, "init_cwnd": 200});
        let (i, v, pkts, alphas) = run_until_case2(cfg, 1000, mark).expect("a case-2 loop in the end");
        let lowest = alphas[..alphas.len() - 1].iter().copied().fold(f64::INFINITY, f64::min);
        assert!(v.alpha <= lowest, "opened at alpha {} above the minimum since start-up {lowest}", v.alpha);
        let peak = alphas.iter().copied().fold(0.0, f64::max);
        assert!(peak > 2.0 * lowest, "the marks raised alpha: {peak} vs {lowest}");
        assert!(i > 52 + 16 + 4, "opened at step {i}");
        assert!(pkts > 0 && v.cwnd < v.w_max, "{v:?}");
    }

    #[test]
    fn ppt_swift_opens_a_loop_when_the_delay_falls_below_target() {
        // Base RTT 10 us: BDP 12.5 KB < the 10-packet initial window, so case 1 opens nothing.
        // Target 30 us. Steps of 20 us give an RTT of 40 us (above), steps of 5 us 10 us (below).
        let cfg = json!({"identification": false, "base_target": "30us", "flow_scaling": false});
        let mut h = H::new_swift(cfg, flow(20_000_000, 10));
        assert_eq!(h.t.name(), "ppt_swift");
        let s = h.start();
        assert!(s.iter().all(|p| p.kind == KIND_DATA && p.ecn == Ecn::NotEct), "Swift HCP: not ECT");
        // Steps below target until the `n`-th case-2 loop opens; returns the state right after
        // the ACK that opened it and the loop's initial window in packets.
        fn fall_below(h: &mut H, n: u32) -> (DualView, u64) {
            let before = h.t.lp_stats(0).pkts;
            for _ in 0..4 {
                h.advance(h.now + Time::us(5));
                let w: Vec<Packet> = std::mem::take(&mut h.wire);
                let mut opened = None;
                for p in w {
                    let out = h.deliver(&p);
                    h.wire.extend(out);
                    if opened.is_none() && h.t.lp_stats(0).case2_loops == n {
                        let lcp = h.t.engine().lcp(0).unwrap();
                        opened = Some((h.t.view(0).unwrap(), lcp.stats().pkts - before + lcp.to_pace()));
                    }
                }
                if let Some(o) = opened {
                    return o;
                }
            }
            panic!("no loop opened when the delay fell below target: {:?}", h.t.view(0));
        }
        // Above target for 6 RTTs: Swift cuts (x 0.8 per RTT), no loop opens.
        for _ in 0..12 {
            h.step(Time::us(20));
        }
        let v = h.t.view(0).unwrap();
        assert_eq!(h.t.lp_stats(0).loops, 0, "{v:?}");
        assert!(v.cwnd < v.w_max / 2, "{v:?}");
        // The delay falls below target: the first such ACK opens one loop with
        // I = min(W_max - cwnd, max_mdf x W_max) = W_max / 2 here (the gap is larger).
        let (v, pkts) = fall_below(&mut h, 1);
        assert!(v.w_max - v.cwnd > v.w_max / 2);
        assert_eq!(pkts, (v.w_max / 2 + MSS / 2) / MSS, "I = W_max / 2, {v:?}");
        assert!(h.log.iter().filter(|(_, p)| p.kind == KIND_LP_DATA).all(|(_, p)| p.ecn == Ecn::Ect && p.prio == 4));
        // Staying below target opens nothing more (the delay does not fall again); the window
        // grows back past W_max.
        for _ in 0..80 {
            h.step(Time::us(5));
        }
        assert_eq!(h.t.lp_stats(0).case2_loops, 1);
        let v = h.t.view(0).unwrap();
        assert!(!v.lp_open && v.cwnd == v.w_max, "{v:?}");
        // One RTT above target (one cut, x 0.8), then below: I = the gap W_max - cwnd.
        h.step(Time::us(20));
        h.step(Time::us(20));
        let (v, pkts) = fall_below(&mut h, 2);
        let gap = v.w_max - v.cwnd;
        assert!(gap > 0 && gap < v.w_max / 2, "{v:?}");
        assert_eq!(pkts, (gap + MSS / 2) / MSS, "I = W_max - cwnd, {v:?}");
    }

    #[test]
    fn loops_meet_without_resending_known_delivered_bytes() {
        for cfg in [json!({}), json!({"ewd": false}), json!({"send_buffer": "64KB"})] {
            let size = 300 * MSS + 17;
            let mut h = H::new(cfg.clone(), flow(size, 40));
            h.start();
            // Known delivered at the sender, by time: ranges from LP ACKs and cumulative ACKs.
            let mut known: Vec<(u64, u64)> = Vec::new();
            let mut steps = 0;
            while h.completions == 0 && steps < 2000 {
                steps += 1;
                h.advance(h.now + Time::us(20));
                let w: Vec<Packet> = std::mem::take(&mut h.wire);
                for p in w {
                    if p.dst == 0 {
                        match p.kind {
                            KIND_LP_ACK => {
                                let (r1, r2, _) = parse_lp_ack(&p);
                                crate::transport::lowprio::insert_range(&mut known, r1.0, r1.1);
                                crate::transport::lowprio::insert_range(&mut known, r2.0, r2.1);
                            }
                            _ => crate::transport::lowprio::insert_range(&mut known, 0, p.ack),
                        }
                    }
                    let before = known.clone();
                    let s = h.deliver(&p);
                    for q in s.iter().filter(|q| q.is_data()) {
                        let (a, b) = (q.seq, q.seq + q.payload as u64);
                        for &(x, y) in &before {
                            assert!(b <= x || a >= y, "{cfg}: sent [{a},{b}) already known delivered in [{x},{y})");
                        }
                    }
                    h.wire.extend(s);
                }
            }
            assert_eq!(h.completions, 1, "{cfg}: completes exactly once");
            assert!(h.t.engine().receiver_complete(0));
            let lp_bytes = h.t.lp_stats(0).bytes;
            assert!(lp_bytes > 0, "{cfg}: the LCP contributed");
            // Bytes still in flight from the LCP when the HCP reaches them are sent twice (the
            // HCP cannot know yet); that is bounded by the two windows in flight at the crossing.
            let sent: u64 = h.log.iter().filter(|(_, p)| p.is_data()).map(|(_, p)| p.payload as u64).sum();
            assert!(sent >= size && sent - size <= 40 * MSS, "{cfg}: {} duplicate bytes", sent - size);
        }
    }

    #[test]
    fn hypothetical_fills_the_gap_to_a_fraction_of_mw_each_round() {
        // 10 Gbps, base RTT 40 us (20 us each way): BDP = 50,000 B; initial window
        // 10 x 1460 = 14,600 B; no ECN marks, so the HCP stays in slow start (+1 MSS per
        // ACK). MW = max(BDP, largest cwnd so far). At each round end (and at the start) a
        // fresh loop sends n = (fill x MW - cwnd + MSS/2) / MSS opportunistic packets, 0 when
        // fill x MW <= cwnd, paced over the round (RTT 40 us). The rounds, by hand:
        //   round 1, t = 0 (start): cwnd 14,600, MW 50,000;
        //   round 2, t = 40 us, 1st ACK (snd_una 1,460 >= round end 0): cwnd 16,060, MW 50,000,
        //     next round end = snd_max = 14,600 + 2 x 1,460 = 17,520;
        //   round 3, t = 80 us, 2nd ACK of that step (snd_una 17,520): cwnd = 29,200 (after
        //     round 1's 10 ACKs) + 2 x 1,460 = 32,120, MW 50,000; next end 43,800 + 4 x 1,460 = 49,640;
        //   round 4, t = 120 us, 4th ACK (snd_una 49,640): cwnd = 58,400 + 4 x 1,460 = 64,240 = MW.
        // fill 0.5: 25,000 - 14,600 = 10,400 B -> 7; 25,000 - 16,060 = 8,940 -> 6; then < 0 -> 0, 0.
        // fill 1.0: 35,400 -> 24; 33,940 -> 23; 17,880 -> 12; 0 -> 0.
        // fill 1.5: 75,000 - 14,600 = 60,400 -> 41; 58,940 -> 40; 42,880 -> 29;
        //           96,360 - 64,240 = 32,120 -> 22.
        // fill 0.25: 12,500 < every cwnd -> 0 in every round.
        let cases: [(f64, [usize; 4]); 4] =
            [(0.25, [0, 0, 0, 0]), (0.5, [7, 6, 0, 0]), (1.0, [24, 23, 12, 0]), (1.5, [41, 40, 29, 22])];
        for (fill, want) in cases {
            // fill 1.0 is the default: leave the field out.
            let cfg = if fill == 1.0 {
                json!({"hypothetical": true})
            } else {
                json!({"hypothetical": true, "hypothetical_fill": fill})
            };
            let mut h = H::new(cfg, flow(10_000_000, 40));
            h.start();
            for _ in 0..8 {
                h.step(Time::us(20));
            }
            assert_eq!(h.now, Time::us(160));
            if fill == 1.0 {
                // 1.0 given explicitly is the default, packet for packet; the counts above for
                // fill 1.0 are the rule before the option existed (MW - cwnd each round).
                let mut e = H::new(json!({"hypothetical": true, "hypothetical_fill": 1.0}), flow(10_000_000, 40));
                e.start();
                for _ in 0..8 {
                    e.step(Time::us(20));
                }
                assert_eq!(format!("{:?}", e.log), format!("{:?}", h.log));
            }
            let lp: Vec<(Time, Packet)> = h.log.iter().filter(|(_, p)| p.kind == KIND_LP_DATA).copied().collect();
            assert!(lp.iter().all(|(_, p)| p.prio == 4 && p.ecn == Ecn::NotEct), "no scheduling, no LCP ECN");
            let v = h.t.view(0).unwrap();
            assert_eq!(v.w_max, v.cwnd.max(50_000), "fill {fill}: MW = the largest cwnd, at least the BDP");
            for (r, &n) in want.iter().enumerate() {
                let (from, to) = (Time::us(40 * r as u64), Time::us(40 * (r as u64 + 1)));
                let round: Vec<Time> = lp.iter().map(|x| x.0).filter(|t| *t >= from && *t < to).collect();
                assert_eq!(round.len(), n, "fill {fill}: round {}", r + 1);
                // Paced: packet k at the round's start + k x (40 us / n).
                for (k, t) in round.iter().enumerate() {
                    assert_eq!(*t, from + Time(Time::us(40).0 / n as u64 * k as u64), "fill {fill}, round {}", r + 1);
                }
            }
        }
    }

    #[test]
    fn switches_and_ablations() {
        // lcp = false: plain DCTCP with scheduling; no opportunistic packet ever.
        let mut h = H::new(json!({"lcp": false}), flow(1_000_000, 40));
        h.start();
        for _ in 0..50 {
            h.step(Time::us(20));
        }
        assert!(h.log.iter().all(|(_, p)| !p.flags.has(PacketFlags::OPPORTUNISTIC)));
        // scheduling = false: HCP in P0, LCP in P4 even for an identified large flow.
        let mut h = H::new(json!({"scheduling": false}), flow(1_000_000, 40));
        h.start();
        h.step(Time::us(20));
        h.step(Time::us(20));
        assert!(h.log.iter().all(|(_, p)| p.prio == 0 || p.prio == 4));
        assert!(h.wire.iter().any(|p| p.kind == KIND_LP_DATA));
        // lcp_ecn = false: opportunistic packets are Not-ECT.
        let mut h = H::new(json!({"lcp_ecn": false, "identification": false}), flow(1_000_000, 40));
        let s = h.start();
        assert!(s.iter().filter(|p| p.kind == KIND_LP_DATA).all(|p| p.ecn == Ecn::NotEct));
        // ewd = false: line rate from the first packet (see without_ewd_the_loop_sends_at_line_rate).
        let mut h = H::new(json!({"ewd": false, "identification": false}), flow(1_000_000, 40));
        let s = h.start();
        assert_eq!(s.iter().filter(|p| p.kind == KIND_LP_DATA).count(), 1);
        // Identified large flows open their LCP one RTT late; unidentified ones at once.
        let mut h = H::new(json!({"identification": false}), flow(1_000_000, 40));
        assert_eq!(h.start().iter().filter(|p| p.kind == KIND_LP_DATA).count(), 1, "paced: first packet now");
        let ecn_k = recommended_ecn_k(&net(), LAMBDA_HCP, LAMBDA_LCP);
        // C x RTT = 10 Gbps x 40 us = 50 KB.
        assert_eq!(ecn_k[0], Bytes(8_500));
        assert_eq!(ecn_k[3], Bytes(8_500));
        assert_eq!(ecn_k[4], Bytes(5_000));
        assert_eq!(ecn_k.len(), 8);
    }

    #[test]
    fn config_errors_name_the_field() {
        let e = |v| Ppt::from_config(&v, &net()).err().unwrap().field();
        assert_eq!(e(json!({"thresholds": ["1B", "2B", "3B", "4B"]})), "transport.thresholds");
        assert_eq!(e(json!({"alpha_window": 33})), "transport.alpha_window");
        assert_eq!(e(json!({"ewd": "yes"})), "transport.ewd");
        assert_eq!(e(json!({"lcp_idle_rtts": 0})), "transport.lcp_idle_rtts");
        assert_eq!(e(json!({"lcp_rtt": "srtt"})), "transport.lcp_rtt");
        assert!(Ppt::from_config(&json!({"lcp_rtt": "lp"}), &net()).is_ok());
        assert!(Ppt::from_config(&json!({"lcp_rtt": "hcp"}), &net()).is_ok());
        assert_eq!(e(json!({"ecn": false})), "transport.ecn");
        assert_eq!(e(json!({"lambda": 0.1})), "transport.lambda");
        for bad in [json!(0.0), json!(-0.5), json!("1.0")] {
            assert_eq!(e(json!({"hypothetical": true, "hypothetical_fill": bad})), "transport.hypothetical_fill");
        }
        // Only meaningful in the hypothetical DCTCP: given without it, an error (even at 1.0).
        for fill in [1.0, 0.5] {
            let err = Ppt::from_config(&json!({"hypothetical_fill": fill}), &net()).err().unwrap();
            assert_eq!(err.field(), "transport.hypothetical_fill");
            assert!(err.to_string().contains("hypothetical = true"), "{err}");
        }
        assert!(Ppt::from_config(&json!({"hypothetical": true, "hypothetical_fill": 1.5}), &net()).is_ok());
        let mut n = net();
        n.priorities = 1;
        assert_eq!(Ppt::from_config(&json!({}), &n).err().unwrap().field(), "transport.lcp");
        assert!(Ppt::from_config(&json!({"lcp": false}), &n).is_ok());
        let e = |v| Ppt::from_config_swift(&v, &net()).err().unwrap().field();
        assert_eq!(e(json!({"alpha_window": 4})), "transport.alpha_window");
        assert_eq!(e(json!({"hypothetical_fill": 0.5})), "transport.hypothetical_fill");
        assert_eq!(e(json!({"ecn": true})), "transport.ecn");
        assert_eq!(e(json!({"max_mdf": 2})), "transport.max_mdf");
        assert_eq!(e(json!({"lcp_idle_rtts": 0})), "transport.lcp_idle_rtts");
        assert!(Ppt::from_config_swift(&json!({"base_target": "20us", "send_buffer": "1MB"}), &net()).is_ok());
    }
}
