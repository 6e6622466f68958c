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

#[cfg(test)]
mod tests;

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
