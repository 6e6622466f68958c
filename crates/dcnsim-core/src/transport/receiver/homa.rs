//! Homa: receiver-driven message transport with network priorities (Montazeri, Li,
//! Alizadeh, Ousterhout, "Homa: A Receiver-Driven Low-Latency Transport Protocol Using
//! Network Priorities", SIGCOMM 2018, §3), optionally with the Aeolus first-RTT building
//! block ([`crate::transport::aeolus`]; Hu et al., ToN 2021, §III, §V-C, §VI).
//!
//! Sources. The Homa paper's text is not in this project's seeds; the mechanism follows its
//! §3 as summarised by the seed papers that use Homa as a baseline (Aeolus §II-C, §V-A/C,
//! §VI; PPT and RPO's Homa settings) and the public Homa implementations' documented
//! behaviour (grant offsets, RESEND ranges), checked against the public Homa simulator the
//! Aeolus authors extended (PlatformLab/HomaSimulation, OMNeT++): there too a receiver grants
//! one packet per arriving packet, keeps at most `maxOutstandingRecvBytes` (= RTTbytes,
//! unscheduled bytes included) in flight per granted message, grants to the top
//! `numSendersToKeepGranted` (the overcommitment) and never revokes grants already given;
//! no receiver-wide bound on outstanding grants (an early version's `TrafficPacer` had
//! one; the final `SchedSenders` does not). Its configurations set
//! `numSendersToKeepGranted` equal to the number of scheduled priority levels (6 for the
//! web-server workload, as Aeolus §V-A's overcommitment 6 with 8 queues) and `rttBytes` as a
//! fixed parameter (10,000 B, "rtt*nicLinkSpeed" at 10 Gbps), not from the links. Its switch
//! port is one drop-tail queue sorted by priority with a capacity in frames: one buffer
//! shared by all classes of the port, as here (bytes instead of frames). Its two-tier
//! topology sprays packets over the spines at random ("random spray multipath routing");
//! the Aeolus repros here keep per-flow ECMP (see `repro/aeolus_homa_tables/README.md`).
//! Every choice not fixed there is listed below.
//!
//! # What is modelled
//! - **Messages and unscheduled bytes** (Homa §3.2): a flow is one message. Its first
//!   `rtt_bytes` (rounded up to whole packets) are *unscheduled*: sent at once at line
//!   rate without waiting for the receiver. Every data packet carries the message length,
//!   so the first one to arrive tells the receiver about the message.
//! - **Grants in SRPT order with overcommitment** (§3.3, §3.5): the receiver keeps, for
//!   each of at most `overcommitment` messages with the fewest remaining bytes (among its
//!   incomplete messages that still need grants), `rtt_bytes` granted but not yet received:
//!   whenever a packet of such a message arrives it sends a GRANT carrying the new grant
//!   offset min(message length, bytes received + `rtt_bytes`). Fully granted messages leave
//!   the candidate set, so the next message gets its grants. A completed message frees its
//!   slot immediately.
//! - **Sender SRPT** (§3.3): a sender hands its NIC one data packet at a time (when the
//!   NIC is idle), from the message with the fewest bytes left to send that has a packet it
//!   may send (unscheduled, granted, or requested by a RESEND).
//! - **Unscheduled priorities from the workload** (§3.4): the classes are split into
//!   `unsched_prios` levels for unscheduled packets (the highest ones) and `sched_prios`
//!   levels below them for scheduled packets. By default the split is proportional to
//!   the fraction of the workload's bytes that are unscheduled, and the message-size
//!   cutoffs between unscheduled levels are chosen so that each level carries the same
//!   number of unscheduled bytes (smaller messages in higher levels). The workload's size
//!   CDF comes from `NetInfo::size_cdf`; see [`unsched_cutoffs`].
//! - **Scheduled priorities by rank** (§3.4): the receiver writes into each GRANT the class
//!   for the message's scheduled packets: among the n messages it is granting, the one with
//!   the fewest remaining bytes gets the highest scheduled level; when n is smaller than the
//!   number of scheduled levels the lowest n levels are used (the largest granted message on
//!   the lowest), leaving higher levels free for shorter messages that arrive later.
//! - **Loss recovery by timeouts** (§3.7): finite switch buffers drop packets. A receiver
//!   that expects bytes of an incomplete message (granted or unscheduled, not yet here) and
//!   has seen none of them for `resend_timeout` sends one RESEND per missing packet range
//!   below the grant offset (options: the first range only, a limit per sending host; see
//!   "Loss recovery as Homa's designers built it" and "The RESEND rule" below); the sender
//!   keeps every message until the receiver ACKs it and retransmits the requested range (without needing a grant), in the
//!   RESEND's class; a RESEND also grants the bytes it names (so a lost GRANT is
//!   repaired too). A sender that has heard nothing at all about a message
//!   (no GRANT, RESEND, BUSY, ACK) for `sender_timeout` since its last packet of it resends
//!   the message's first packet: the receiver may not know the message (all its packets
//!   lost). A receiver that already knows it answers BUSY, which stops that timer.
//! - **Completion**: when the receiver holds every byte it reports the flow complete and
//!   ACKs the sender (the RPC response plays this role in Homa), which then forgets it.
//!
//! # Homa + Aeolus (`aeolus = true`)
//! Homa's unscheduled packets are Aeolus' unscheduled packets: flagged `UNSCHEDULED` and,
//! in the default `aeolus_mode = "selective_drop"`, kept in Homa's unscheduled classes, so
//! the switches must measure the selective-dropping threshold over the whole port
//! (`[network] queue_policy = "selective_drop"`, `selective.per_port = true`, threshold 6 KB:
//! Aeolus §V-A and §VI, "for Homa we configure per-port ECN/RED"). The probe follows the
//! last unscheduled packet in the same class; the receiver ACKs each unscheduled packet and
//! the probe; both ends infer the same losses (see [`crate::transport::aeolus`]).
//! Aeolus §III-E describes integrating Aeolus as giving unscheduled packets a *lower* network
//! priority; for Homa the paper instead keeps Homa's classes (its §VI footnote notes that
//! Homa serves unscheduled packets in higher-priority queues) and configures per-port
//! selective dropping (§V-A testbed, §VI). We follow the Homa-specific text; the
//! lower-priority reading is `aeolus_mode = "low_priority"`.
//!
//! Homa's grants become Aeolus' credits: a GRANT offset G authorises the sender to have
//! *charged* G bytes, where every new packet and every Aeolus retransmission is charged
//! its payload, so loss-detected unscheduled packets are resent once, as scheduled packets,
//! in the grant's class, ahead of new data (§III-C order: lost, new, sent-but-unACKed). To
//! keep `rtt_bytes` in flight the receiver counts the bytes it declared lost: G =
//! min(length + lost, received + lost + `rtt_bytes`). Without losses this is plain Homa.
//! The sender leaves the pre-credit state at the first GRANT (§III-A). Homa's timeouts stay
//! as the last resort (a lost probe or a dropped scheduled packet).
//!
//! What Aeolus does not change: selective dropping keeps *unscheduled* packets from taking
//! buffer or bandwidth from scheduled ones, but scheduled packets can still overflow a port
//! by themselves. A receiver keeps `rtt_bytes` in flight for each of the `overcommitment`
//! messages it grants, grants already given to a message that loses its rank stay valid, and
//! with Aeolus every message whose unscheduled packets were dropped needs grants for their
//! retransmissions and competes for the overcommitment slots. With the Aeolus §V setting
//! (`rtt_bytes` 56 KB, overcommitment 6, 200 KB per port) that exceeds the buffer, and the
//! lost scheduled packets (new data and Aeolus retransmissions alike) wait for the RESEND
//! timeout; the test `aeolus_does_not_protect_scheduled_packets_from_homa_overcommitment`
//! shows the threshold, and `repro/aeolus_homa_tables/README.md` the measured counts: in the
//! full-size §V-C setting with spraying every overflow is at a receiver's downlink, whose
//! ~200 KB backlog is all scheduled (the unscheduled classes hold ~20 B of it) while the
//! receiver has 300-550 KB granted and not received; the reduced test
//! `aeolus_scheduled_losses_are_downlink_overflow_from_grants_beyond_the_buffer` asserts it. With
//! `aeolus_mode = "low_priority"` (§V-E alternative) unscheduled packets and the probe ride the
//! lowest class and the scheduled levels sit just above it.
//!
//! # The idealised first RTT (Aeolus §II-C, Fig. 1(b) and 4)
//! The paper's "hypothetical Homa" knows, with hindsight, the spare bandwidth of every link
//! in the first RTT: it sends unscheduled packets only where they fit, so scheduled packets
//! are never queued behind or dropped because of them; what does not fit is sent later as
//! scheduled data. No sender can know that, so the oracle is built from its effect:
//! - unscheduled packets ride the lowest class (`aeolus = true`, `aeolus_mode =
//!   "low_priority"`): a switch sends them only when no scheduled packet waits, so they use
//!   spare capacity only;
//! - the switches push that class out (`network.pushout_classes = [7]`): a scheduled packet
//!   that finds the port full evicts queued unscheduled packets, so they never take buffer
//!   from scheduled ones;
//! - the probe rides the control class (`aeolus_probe_class = "control"`): it reaches the
//!   receiver at once, which then counts every unscheduled packet not yet arrived (pushed
//!   out, dropped, or still waiting for spare capacity somewhere) as not sent in the first
//!   RTT and grants it; the sender resends it as a scheduled packet, in the message's
//!   scheduled class (for a small message the highest one). The receiver also learns
//!   about a message whose every unscheduled packet is stuck, which with the probe in the
//!   lowest class (the plain §V-E alternative) waited with them, so the small messages whose
//!   packets were stuck behind granted data finished only when that data had drained.
//!
//! Differences from the oracle: the oracle sends nothing that will not fit, while here the
//! whole first RTT is sent and what does not fit is sent a second time (the stuck original
//! may still arrive, as a duplicate, when capacity frees up), so transfer efficiency is
//! below 1; a unscheduled packet in service still holds a link for one packet time
//! (switches do not preempt); and the construction only keeps *unscheduled* packets from
//! hurting scheduled ones: scheduled packets that overflow a port by themselves (the grants
//! of several messages beyond the buffer, above) are still dropped.
//!
//! # Configuration (`protocol = "homa"`)
//! | field | default | meaning |
//! |---|---|---|
//! | `rtt_bytes` | fastest host rate x largest base RTT (one BDP) | unscheduled bytes per message, and granted-but-not-received bytes per granted message (Homa's RTTbytes) |
//! | `overcommitment` | `sched_prios` | messages a receiver grants to at once (Homa's degree of overcommitment; Aeolus §V-A uses 6, PPT §6 uses 2) |
//! | `unsched_prios` | from the workload (see above); 2 without a CDF | classes for unscheduled packets (classes 0..) |
//! | `sched_prios` | `network.priorities` - `unsched_prios` | classes for scheduled packets (below the unscheduled ones) |
//! | `unsched_cutoffs` | from the workload CDF; without one, `rtt_bytes` x j / `unsched_prios` | message sizes (bytes, increasing, `unsched_prios` - 1 of them): a message of at most cutoff j uses unscheduled level j |
//! | `resend_timeout` | 5 ms | receiver: no progress for this long -> RESEND (HomaModule: 5 timer ticks of 1 ms; Aeolus §V: 1 ms / 100 us; §II-C: 10 ms; PPT §6.2: 1 ms; eager Homa 20 us) |
//! | `resend_ranges` | `"all"` | `"all"`: one RESEND per missing range; `"first"`: a RESEND round asks for the first missing range only |
//! | `resend_per_peer` | `false` (0) | RESENDs a receiving host may have outstanding to one sending host (`true` = 1, or a count), handed to its stalled messages least recently asked first; `false`: no limit |
//! | `rank_until_received` | false | true: a granted message keeps its rank and overcommitment slot until its last byte arrives (HomaModule); false: it leaves the ranking once fully granted |
//! | `resend_class` | `"message"` | class a RESEND asks for: the message's current class; `"highest"`: class 0 |
//! | `sender_timeout` | 2 x `resend_timeout` | sender: nothing heard about a message for this long -> resend its first packet |
//! | `aeolus` | false | add the Aeolus building block |
//! | `aeolus_mode` | `"selective_drop"` | `"low_priority"`: the §V-E priority-queueing alternative |
//! | `aeolus_probe` | true | false: Aeolus without the probe (Fig. 22) |
//! | `aeolus_probe_class` | `"unscheduled"` | `"control"`: the probe rides class 0 (needs `aeolus_mode = "low_priority"`); the idealised first RTT below |
//!
//! # Choices where the papers leave room
//! - Control packets (GRANT, RESEND, BUSY, ACK, Aeolus ACKs) ride class 0, the highest,
//!   shared with the unscheduled packets of the smallest messages (Homa sends grants at the
//!   highest priority).
//! - Unscheduled bytes per message: `rtt_bytes` rounded up to whole packets (payload
//!   `mtu - header` each), at most the message. The receiver's initial implicit grant is
//!   those bytes.
//! - A sender may send a packet when what it has charged is below the grant offset (a
//!   whole packet goes even if it ends beyond the offset), as Homa's implementation does.
//! - The unscheduled/scheduled split from the workload: `unsched_prios` = round(P x f)
//!   clamped to [1, P - 1], f = E[min(size, rtt_bytes)] / E[size], P = `network.priorities`.
//!   Cutoffs: the smallest CDF sizes at which the cumulative unscheduled bytes reach
//!   j / `unsched_prios` of the total. Without a CDF (flow lists are mixed in; only
//!   background flows), 2 unscheduled levels (with 8 classes: 6 scheduled levels, the
//!   overcommitment of Aeolus §V-A) and cutoffs splitting [0, `rtt_bytes`] evenly.
//! - With `overcommitment` above `sched_prios`, ranks beyond the last level share the
//!   lowest scheduled level. With a single class everything rides class 0.
//! - The receiver sends a GRANT only when the offset advances (one per data packet of a
//!   granted message in steady state); a rank change alone is carried by the next GRANT.
//! - RESEND: one per missing contiguous range, all sent at one expiry (`resend_ranges =
//!   "first"`: the first only), below min(length, grant offset - bytes declared lost)
//!   (declared-lost packets included), class = the message's scheduled class (its
//!   unscheduled class if it needs no grants); when to send it: "The RESEND rule" below.
//!   The timer re-arms after each RESEND round. Packets not yet
//!   sent at all are not resent (the sender sends them as new data). A RESEND also counts
//!   as contact for the sender timeout. With Aeolus, a RESEND naming a packet Aeolus found
//!   lost but has not yet resent (no credit yet) takes its place: the packet is sent once,
//!   charged against the grant as Aeolus' retransmission would have been.
//! - A RESEND naming packets the sender has not sent yet (it was busy sending shorter
//!   messages, Homa's sender SRPT) is answered with BUSY, which restarts the receiver's
//!   timer (the role BUSY plays in Homa's implementation); the packets go out as new data.
//! - `FlowStats::timeouts` counts timeouts that led to a retransmission (so `flows_with_timeout`
//!   is the Aeolus paper's Fig. 16 count, flows that experience at least one timeout, where a
//!   timeout is the loss-recovery event): RESENDs that made
//!   the sender resend at least one packet (counted at the sender), and sender timeouts
//!   that found the receiver unaware of the message (counted when that first packet
//!   arrives; a BUSY answer means the sender only had to wait for grants). A RESEND may be
//!   spurious: a packet of a message that lost rank waits in a low class, and a timeout
//!   shorter than that wait resends it (Aeolus §II-C's dilemma).
//!   `retx_bytes` counts every retransmitted payload (RESEND, sender timeout, Aeolus).
//! - Sender SRPT key: bytes never sent, then arrival time, then flow id.
//! - Overcommitment counts *messages* (the Homa paper's wording); HomaSimulation counts
//!   *senders* (the best message of each of the top senders). A sender with two granted
//!   messages for one receiver sends one at a time, so counting messages queues fewer bytes
//!   in the network, never more.
//! - Aeolus retransmissions and all scheduled packets of a message ride the class of its
//!   latest GRANT. By Homa's rank rule a receiver granting a single message puts it in the
//!   lowest class, so those packets wait behind other receivers' higher-ranked scheduled
//!   traffic wherever paths share a port (a core link under per-flow ECMP).
//! - The receiver's timer cannot tell a lost packet from one still queued in a low class,
//!   or one the sender has not sent yet because it serves shorter messages first (sender
//!   SRPT) for longer than `resend_timeout`: such a RESEND retransmits packets that are not
//!   lost (Aeolus §II-C's dilemma; the Homa paper's timer has the same blind spot). The
//!   sender resends what it already sent of the named range and answers BUSY for the rest.
//!   The ignored test `diagnose_aeolus_repro` counts these spurious requests.
//! - Aeolus: an unscheduled packet the receiver declared lost that arrives late after all
//!   (only possible with reordering, e.g. `routing = "spray"`) stays counted in the bytes
//!   declared lost: the sender may already have spent credit on its retransmission, and
//!   over-granting one packet is harmless where under-granting would stall the message
//!   until a RESEND. The converse case is "Two views of one loss" below.
//!
//! # Two views of one loss
//! Aeolus lets both ends infer the same losses from the order of packets and ACKs (§III-C),
//! and the grant offset rests on that: the receiver grants min(length + lost, received +
//! lost + `rtt_bytes`) counting the packets *it* declared lost, while the sender charges
//! every retransmission *it* decides on (a packet it declared lost, or, with no new data
//! left, one still unacknowledged). The two sets differ when the sender misses the ACK of
//! a packet the receiver holds: the probe's ACK overtakes it (per-packet spraying: the
//! ACKs of one flow take different spines) or the ACK is dropped. The sender then pays one
//! packet of credit twice and, near the end of the message, stops one packet short of the
//! grant while the receiver believes that packet is on its way: the message waits for the
//! 1 ms RESEND timeout although nothing is lost. Measured before the rule (web search,
//! load 0.4, 64 hosts, `routing = "spray"`, `rtt_bytes` 28 KB so that nothing overflows):
//! 42 Homa+Aeolus flows with a timeout, no scheduled packet lost, small-flow p99 1,018 us;
//! with the rule below 6 flows (their RESENDs spurious) and p99 19.9 us. With per-flow ECMP
//! the rule changed nothing measured (cache follower at full size: an identical run).
//! The rule: a retransmission the sender paid with credit carries [`DATA_CHARGED`]; a
//! receiver that gets one for a packet it never declared lost counts it now as declared
//! lost (once per packet, [`crate::transport::aeolus::AeolusReceiver::sender_charged`]), which raises
//! the grant by that packet. The paper does not discuss this case (it assumes the two
//! inferences agree); HomaSimulation, which sprays, has no Aeolus. Test:
//! `aeolus_retransmission_paid_for_a_packet_the_receiver_holds_is_granted_again`.
//!
//! # Loss recovery as Homa's designers built it
//! The Linux implementation (HomaModule: its protocol description and its timer code over
//! the years) shows how Homa keeps a receiver from asking for data that is only queued.
//! Its timer ticks every 1 ms; a message's silence counter is reset by any packet of the
//! message and held at zero while everything granted has arrived (as in "The RESEND rule").
//! Three mechanisms, each an option here; the defaults follow the implementation's current
//! code where its versions differ, for the reasons measured below:
//! - Timeout (`resend_timeout`, default 5 ms): a RESEND after 5 silent ticks
//!   (`resend_ticks` = 5 since early 2024, 15 in 2021-2024), repeated every 5 ticks. The
//!   papers that use Homa as a baseline set shorter timers (Aeolus §V-C 1 ms, PPT §6.2
//!   1 ms); their reproductions pin them.
//! - Scope (`resend_ranges`, default `"all"`): the protocol description and the code from
//!   2019 to mid-2024 ask for the first unreceived range only (`"first"`); later code asks
//!   for every gap and the granted bytes after the last one (`"all"`).
//! - Per-peer limit (`resend_per_peer`, default no limit): the protocol description and
//!   the code from 2020 to early 2024 send one RESEND at a time to a given host (many
//!   messages of one host stalling together means that host is overloaded), rotated among
//!   that host's messages so that each eventually gets one; the code dropped the limit in
//!   early 2024 because messages waited too long for their turn. With a limit here a RESEND
//!   counts against its sender's limit until the sender answers it (a packet it resent
//!   because of it, or BUSY), the message completes, or `resend_timeout` passes; a freed
//!   slot goes at once to that sender's due message asked least recently (never asked
//!   first, then arrival, then flow id). A message asks again at most once per
//!   `resend_timeout`.
//!
//! Measured (the validation suite's SRPT rows: 16 senders -> 1 receiver, 10 Gbps, 20 MB
//! buffer, so no packet is ever lost and every RESEND is spurious; load 0.8): with a 1 ms
//! timer, 1,300 timeouts (100 KB-1 MB messages) and 4,528 (1-10 MB), mean slowdown +5.5%
//! and +7.8% over preemptive SRPT. First range plus one RESEND per host: 1,217 and 4,294
//! (+5.6%, +7.4%): the missing bytes of a queued message are one range, and the senders
//! are 16 different hosts. A 5 ms timer: 128 and 694 timeouts, +4.5% and +1.6% (first
//! range plus limit on top: 123 and 666). The timer does the work; under SRPT a large
//! message can wait behind shorter ones for longer than any timer, so none removes them
//! all. Where packets are really lost the first-range scope and the limit cost time: in the
//! reduced `repro/ppt_fig23_incast` (1 ms timer) plain Homa's mean FCT rose from 4.5 ms to
//! 6.3 ms (31 senders; 1.6 to 4.2 ms with 8): with the first range only, a message with
//! several gaps needs several RESEND rounds. Hence the defaults `"all"` and no limit.
//!
//! Two further choices of the implementation, options here, off by default:
//! - `rank_until_received`: HomaModule keeps a message among the ranked, granted messages
//!   (holding one of the overcommitment slots) until its last byte arrives. Without it a
//!   message leaves the ranking once fully granted, and its RESEND asks for the class of its
//!   last GRANT, possibly below the messages granted since. Measured: no change on the
//!   SRPT rows (load 0.8, 1 ms: +5.5%, 1,297 timeouts instead of 1,300); in the reduced
//!   `ppt_fig21_memcached` Homa+Aeolus (overcommitment 2) the mean FCT rose from 13.5 to
//!   136 us (not diagnosed further), while in the reduced `ppt_fig23_incast` Homa+Aeolus
//!   it fell from 2.95 to 2.40 ms (31 senders). It changes the grant schedule, not only
//!   loss recovery, so it stays opt-in.
//! - `resend_class = "highest"`: HomaModule's RESEND asks for its highest priority. On the
//!   SRPT rows at 1 ms this made things worse (+7.9% and +11.8% over SRPT, as many
//!   timeouts; not diagnosed further).
//!
//! The grant set changing under a message's last packets (the second source of spurious
//! RESENDs) is still modelled, as in Homa: a packet's class is fixed when it is sent, so
//! the last packets of a fully granted message can wait in a class below a longer message
//! granted later (test `fully_granted_message_tail_is_outranked_by_a_longer_message_granted_later`).
//! Only the timer's length decides whether such a wait turns into a RESEND.
//!
//! # The RESEND rule
//! Homa's receiver asks for data only when it is owed data. HomaModule (`homa_check_rpc`):
//! "We've received everything that we've granted, so we shouldn't expect to hear anything
//! until we grant more", and its silence counter stays at zero while that holds. Here a
//! message *awaits data* when received + declared-lost bytes < min(grant offset, length +
//! declared-lost bytes) (with Aeolus each declared-lost unscheduled byte was charged twice
//! by the sender, so it is counted as arrived for this sum; without Aeolus it is
//! received < grant offset). Its no-progress clock runs from the last new data (or from when
//! the receiver learned it); while it does not await data the clock is held at the present,
//! and when a grant makes a waiting message await data again the clock starts at that
//! grant plus the time this host's link needs to deliver every byte the host has asked for
//! and not yet received (the new grant included): the granted packets queue behind those at
//! the downlink. When the clock reaches `resend_timeout` the receiver asks for every missing
//! packet below min(length, grant offset - declared-lost bytes), the offset the sender's new
//! data has reached, declared-lost packets included (their retransmissions are charged
//! first, §III-C). So a message beyond the overcommitment degree (all its granted bytes
//! here) never times out, and one that awaits data always gets its RESEND (there is a
//! missing packet below that offset whenever the sum above falls short).
//!
//! Why (found in `repro/ppt_fig23_incast` at N = 256). The rule before counted a
//! declared-lost packet as missing only once grant >= unscheduled + lost bytes. A 45,034 B
//! message with RTTbytes 45,000 B is all unscheduled (31 packets); all were dropped and so
//! were Aeolus' 31 retransmissions. The grant target min(length + lost, received + lost +
//! RTTbytes) = 90,034 B stayed below 90,068 B, so the timer never asked for anything and the
//! run never ended (the sender had sent every retransmission: a whole packet goes while it
//! has charged less than the grant). Test:
//! `fully_unscheduled_message_whose_aeolus_retransmissions_are_lost_completes_via_resend`.
//! Two fixes were tried first: grant at least unscheduled + lost, or count declared-lost
//! packets once the grant reached its target. Both ended the hang but raised Aeolus
//! Fig. 20's flows with a timeout five-fold. Counted with the test `diagnose_scenario`
//! (a RESEND-named packet whose earlier copy arrives after the RESEND was sent is
//! spurious): in Fig. 20 at N = 32, seed 1, the second fix sent RESENDs for 1,145 packets of
//! which 579 were still queued; at the reduced N = 62, 1,274 of 2,795. A message whose
//! whole first RTT was dropped (almost all of them in an incast) waits for grants, is
//! granted in the lowest scheduled class, and its retransmissions queue behind the
//! receiver's other granted bytes (up to ~430 KB, ~35 us at 100 Gbps): they arrived about
//! 40 us after the grant, just after a 40 us timeout counted from the grant (or from the
//! probe) had fired; the unpaced RESEND retransmissions then overflowed the port and caused
//! real losses. The old rule hid these RESENDs only by accident (unscheduled bytes exceeded
//! RTTbytes, so a message with nothing received never counted as credited). Starting the
//! clock when the downlink could have delivered what the receiver asked for removes them:
//! with this rule Fig. 20 at N = 32, seed 1 sends no RESEND, and at N = 32 and 256 over five
//! seeds every RESEND names a packet that was lost (Aeolus retransmissions overflowing the
//! receiver's port when the grants outstanding there exceed the buffer, see above). Tests:
//! `no_resend_while_waiting_for_grants_and_the_clock_starts_when_granted_data_can_arrive`
//! (state machine; fails with the rule before) and, in `tests/homa.rs`,
//! `incast_with_the_first_rtt_dropped_sends_no_spurious_resend` (the reduced Fig. 20 incast;
//! measured to fail with the second rejected fix and with a clock counted from the grant).
//! What the rule cannot tell apart (Aeolus §II-C's dilemma, also plain Homa's): a packet
//! of a message that lost its rank is starved in a low class while higher classes keep the
//! link busy. In `repro/ppt_fig23_incast` (120 KB ports, 1 ms timeout) 24% of the packets
//! RESENDs named at N = 32 were still queued, some for over 1 ms.
//!
//! # Header layout
//! DATA (`kind` [`KIND_DATA`], `DATA` [+ `UNSCHEDULED`]): `seq`/`payload`, `ack` = message
//! length, `ts` = send time, `aux2` bits [`DATA_RETX`], [`DATA_SENDER_TIMEOUT`], [`DATA_RESEND`],
//! [`DATA_CHARGED`].
//! GRANT: `seq` = grant offset, `rank` = class for scheduled packets. RESEND: `seq` = first
//! byte, `ack` = byte count, `rank` = class. ACK, BUSY: none. Aeolus PROBE: `seq`/`aux` =
//! offset/index of the last unscheduled packet, `ack` = message length; UACK and PROBE_ACK:
//! `seq`/`aux` = offset/index.
//! Timers: [`TIMER_RECV`] and [`TIMER_SEND`] per flow (token = flow id, kind, generation).
//!
//! Per packet the receiver re-ranks its grantable messages: O(m log m) for m of them.

use crate::config::FieldError;
use crate::packet::{FlowId, NodeId, Packet, PacketFlags};
use crate::transport::aeolus::{self, AeolusConfig, AeolusReceiver, AeolusSender, UnschedMode};
use crate::transport::{token, untoken, Ctx, FlowInfo, FlowStats, NetInfo, TimerSlot, Transport};
use crate::units::{Bytes, Time};
use serde::Deserialize;
use std::collections::VecDeque;
use std::fmt;

pub const KIND_DATA: u8 = 1;
pub const KIND_GRANT: u8 = 2;
pub const KIND_RESEND: u8 = 3;
/// The receiver holds the whole message.
pub const KIND_ACK: u8 = 4;
/// The receiver knows the message (answer to a sender-timeout packet).
pub const KIND_BUSY: u8 = 5;
/// Aeolus probe.
pub const KIND_PROBE: u8 = 6;
/// Aeolus per-packet ACK of an unscheduled packet.
pub const KIND_UACK: u8 = 7;
/// Aeolus ACK of the probe.
pub const KIND_PROBE_ACK: u8 = 8;
/// Data `aux2` bit: a retransmission.
pub const DATA_RETX: u32 = 1;
/// Data `aux2` bit: sent by the sender timeout.
pub const DATA_SENDER_TIMEOUT: u32 = 2;
/// Data `aux2` bit: sent again because a RESEND asked for it.
pub const DATA_RESEND: u32 = 4;
/// Data `aux2` bit (Aeolus): a retransmission of an unscheduled packet that the sender paid
/// with grant credit (charged against the grant offset).
pub const DATA_CHARGED: u32 = 8;
/// Timer kind: the receiver's no-progress timer of a message.
pub const TIMER_RECV: u8 = 1;
/// Timer kind: the sender's nothing-heard timer of a message.
pub const TIMER_SEND: u8 = 2;

// ------------------------------------------------------------------------------------------
// Configuration
// ------------------------------------------------------------------------------------------

/// The `[transport]` table of `protocol = "homa"`.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct HomaConfig {
    pub rtt_bytes: Option<Bytes>,
    pub overcommitment: Option<u32>,
    pub unsched_prios: Option<u8>,
    pub sched_prios: Option<u8>,
    pub unsched_cutoffs: Option<Vec<Bytes>>,
    pub resend_timeout: Time,
    pub resend_ranges: ResendRanges,
    pub resend_per_peer: ResendPerPeer,
    pub rank_until_received: bool,
    pub resend_class: ResendClass,
    pub sender_timeout: Option<Time>,
    pub aeolus: bool,
    pub aeolus_mode: UnschedMode,
    pub aeolus_probe: bool,
    pub aeolus_probe_class: ProbeClass,
}

/// The class of the Aeolus probe (`aeolus_probe_class`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ProbeClass {
    /// The message's unscheduled class, behind its unscheduled packets on every hop.
    #[default]
    Unscheduled,
    /// Class 0, with the control packets: it overtakes unscheduled packets waiting in the
    /// lowest class (`aeolus_mode = "low_priority"`), which it then declares lost.
    Control,
}

/// Which missing packet ranges one RESEND round of a message asks for (`resend_ranges`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ResendRanges {
    /// Only the first missing range (the one with the lowest offset).
    First,
    /// Every missing range below the offset the sender's new data has reached.
    #[default]
    All,
}

/// The class a RESEND asks the sender to retransmit in (`resend_class`).
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ResendClass {
    /// The message's current scheduled class (its unscheduled class if it needs no grants).
    #[default]
    Message,
    /// Class 0, the highest.
    Highest,
}

/// How many RESENDs a receiving host may have outstanding to one sending host
/// (`resend_per_peer`): `true` (= 1), a count, or `false` (= 0, no limit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResendPerPeer(pub u32);

impl<'de> Deserialize<'de> for ResendPerPeer {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = ResendPerPeer;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "true (one outstanding RESEND per sending host), false (no limit) or a count")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<ResendPerPeer, E> {
                Ok(ResendPerPeer(v as u32))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ResendPerPeer, E> {
                u32::try_from(v).map(ResendPerPeer).map_err(|_| E::custom(format!("{v} is too large a count")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ResendPerPeer, E> {
                u64::try_from(v)
                    .map_err(|_| E::custom(format!("{v} is negative: use false for no limit")))
                    .and_then(|v| self.visit_u64(v))
            }
        }
        d.deserialize_any(V)
    }
}

impl Default for HomaConfig {
    fn default() -> Self {
        HomaConfig {
            rtt_bytes: None,
            overcommitment: None,
            unsched_prios: None,
            sched_prios: None,
            unsched_cutoffs: None,
            resend_timeout: Time::ms(5),
            resend_ranges: ResendRanges::All,
            resend_per_peer: ResendPerPeer(0),
            rank_until_received: false,
            resend_class: ResendClass::Message,
            sender_timeout: None,
            aeolus: false,
            aeolus_mode: UnschedMode::SelectiveDrop,
            aeolus_probe: true,
            aeolus_probe_class: ProbeClass::Unscheduled,
        }
    }
}

/// A `[transport]` table error for `homa`. `field()` names the offending key.
#[derive(Clone, Debug, PartialEq)]
pub enum HomaConfigError {
    /// An unknown field, a value of the wrong type or an unparsable time/size.
    Parse(FieldError),
    /// A well-formed value outside its range; `fix` says what to write instead.
    OutOfRange { field: String, value: String, fix: String },
    /// The network description makes Homa impossible.
    Network { field: String, msg: String },
}

impl HomaConfigError {
    /// The offending key, e.g. `transport.rtt_bytes`.
    pub fn field(&self) -> String {
        match self {
            HomaConfigError::Parse(e) => e.field(),
            HomaConfigError::OutOfRange { field, .. } => format!("transport.{field}"),
            HomaConfigError::Network { field, .. } => field.clone(),
        }
    }
}

impl fmt::Display for HomaConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HomaConfigError::Parse(e) => write!(f, "{e}"),
            HomaConfigError::OutOfRange { value, fix, .. } => write!(f, "{} = {value}: {fix}", self.field()),
            HomaConfigError::Network { field, msg } => write!(f, "{field}: {msg}"),
        }
    }
}

impl std::error::Error for HomaConfigError {}

/// Resolved Homa parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct HomaParams {
    pub mtu: u64,
    pub mss: u64,
    pub header: u64,
    pub ctrl_size: u64,
    pub rtt_bytes: u64,
    pub overcommitment: u32,
    /// Priority classes of the network.
    pub classes: u8,
    pub unsched_prios: u8,
    pub sched_prios: u8,
    /// `unsched_prios - 1` increasing message sizes; a message of at most `cutoffs[j]`
    /// bytes (and above `cutoffs[j-1]`) uses unscheduled level j.
    pub cutoffs: Vec<u64>,
    /// Whether the split and the cutoffs came from the workload's CDF.
    pub from_cdf: bool,
    pub resend_timeout: Time,
    pub resend_ranges: ResendRanges,
    /// RESENDs a receiving host may have outstanding to one sending host; 0 = no limit.
    pub resend_per_peer: u32,
    /// A granted message keeps its rank and overcommitment slot until its last byte
    /// arrives (not only until it is fully granted).
    pub rank_until_received: bool,
    pub resend_class: ResendClass,
    pub sender_timeout: Time,
    pub aeolus: Option<AeolusConfig>,
    /// The Aeolus probe rides class 0 instead of the message's unscheduled class.
    pub probe_control: bool,
}

/// Fraction of a workload's bytes that are unscheduled: E[min(size, rtt_bytes)] / E[size],
/// for step-CDF points `(size, P(size <= s))`.
pub fn unsched_byte_fraction(cdf: &[(u64, f64)], rtt_bytes: u64) -> f64 {
    let (mut all, mut un, mut prev) = (0.0, 0.0, 0.0);
    for &(s, p) in cdf {
        let m = (p - prev).max(0.0);
        prev = p;
        all += m * s as f64;
        un += m * s.min(rtt_bytes) as f64;
    }
    if all > 0.0 {
        un / all
    } else {
        1.0
    }
}

/// Homa §3.4 unscheduled cutoffs: `levels - 1` message sizes such that each of the `levels`
/// unscheduled priority levels carries the same share of the workload's unscheduled bytes
/// (a message of size s contributes min(s, `rtt_bytes`)). Cutoff j is the smallest CDF size
/// at which the cumulative unscheduled bytes reach (j + 1) / `levels` of the total.
pub fn unsched_cutoffs(cdf: &[(u64, f64)], rtt_bytes: u64, levels: u8) -> Vec<u64> {
    let levels = levels.max(1) as usize;
    let mut total = 0.0;
    let mut prev = 0.0;
    let mut cum = Vec::with_capacity(cdf.len());
    for &(s, p) in cdf {
        total += (p - prev).max(0.0) * s.min(rtt_bytes) as f64;
        prev = p;
        cum.push((s, total));
    }
    let mut out = Vec::with_capacity(levels - 1);
    for j in 1..levels {
        let target = total * j as f64 / levels as f64;
        // Relative tolerance so that exact shares are not missed by rounding.
        let s = cum.iter().find(|&&(_, c)| c >= target * (1.0 - 1e-12)).map(|c| c.0).unwrap_or(u64::MAX);
        out.push(s);
    }
    out
}

impl HomaConfig {
    pub const FIELDS: &'static [&'static str] = &[
        "rtt_bytes",
        "overcommitment",
        "unsched_prios",
        "sched_prios",
        "unsched_cutoffs",
        "resend_timeout",
        "resend_ranges",
        "resend_per_peer",
        "rank_until_received",
        "resend_class",
        "sender_timeout",
        "aeolus",
        "aeolus_mode",
        "aeolus_probe",
        "aeolus_probe_class",
    ];

    /// Parse a `[transport]` table (JSON form, `protocol` removed). `null` means all defaults.
    pub fn parse(cfg: &serde_json::Value) -> Result<HomaConfig, HomaConfigError> {
        if cfg.is_null() {
            return Ok(HomaConfig::default());
        }
        if !cfg.is_object() {
            return Err(HomaConfigError::Parse(FieldError::invalid(
                "transport",
                format!("expected a table of homa settings, found {cfg}"),
                "write the settings as key = value pairs under [transport]",
            )));
        }
        crate::config::from_table(cfg, "transport").map_err(HomaConfigError::Parse)
    }

    /// Validate and resolve against the network (and the workload's size CDF in `net`).
    pub fn resolve(&self, net: &NetInfo) -> Result<HomaParams, HomaConfigError> {
        let bad =
            |field: &str, value: String, fix: String| HomaConfigError::OutOfRange { field: field.into(), value, fix };
        if net.mtu.0 <= net.header.0 {
            return Err(HomaConfigError::Network {
                field: "network.mtu".into(),
                msg: format!("MTU {} leaves no payload after the {} header; raise the MTU", net.mtu, net.header),
            });
        }
        let rtt_bytes = match self.rtt_bytes {
            Some(b) if b.0 == 0 => {
                return Err(bad(
                    "rtt_bytes",
                    "0".into(),
                    "must be at least 1 byte; remove it for one bandwidth-delay product".into(),
                ))
            }
            Some(b) => b.0,
            None => {
                let b = net.max_host_rate.bdp(net.max_base_rtt).0;
                if b == 0 {
                    return Err(HomaConfigError::Network {
                        field: "topology.host_rate".into(),
                        msg: "the bandwidth-delay product is 0; set transport.rtt_bytes".into(),
                    });
                }
                b
            }
        };
        if self.aeolus_probe_class == ProbeClass::Control
            && !(self.aeolus && self.aeolus_probe && self.aeolus_mode == UnschedMode::LowPriority)
        {
            return Err(bad(
                "aeolus_probe_class",
                "\"control\"".into(),
                "a probe in the control class is for unscheduled packets in the lowest class: set aeolus = true and aeolus_mode = \"low_priority\" (with the probe on), or remove aeolus_probe_class".into(),
            ));
        }
        if self.resend_timeout == Time::ZERO {
            return Err(bad("resend_timeout", "\"0ps\"".into(), "must be > 0, e.g. \"1ms\"".into()));
        }
        if self.sender_timeout == Some(Time::ZERO) {
            return Err(bad(
                "sender_timeout",
                "\"0ps\"".into(),
                "must be > 0; remove it for twice resend_timeout".into(),
            ));
        }
        let classes = net.priorities.clamp(1, 8);
        let level = |field: &str, v: u8| -> Result<u8, HomaConfigError> {
            if v == 0 || (v > classes.saturating_sub(1) && classes > 1) {
                Err(bad(
                    field,
                    v.to_string(),
                    format!(
                        "must be between 1 and {} (network.priorities = {classes}; unscheduled and scheduled levels share them)",
                        classes.saturating_sub(1).max(1)
                    ),
                ))
            } else {
                Ok(v)
            }
        };
        let cdf = net.size_cdf.as_deref().filter(|c| !c.is_empty());
        let (unsched_prios, sched_prios) = if classes == 1 {
            for (f, v) in [("unsched_prios", self.unsched_prios), ("sched_prios", self.sched_prios)] {
                if let Some(x) = v {
                    if x != 1 {
                        return Err(bad(
                            f,
                            x.to_string(),
                            "network.priorities is 1: use 1 (everything rides class 0)".into(),
                        ));
                    }
                }
            }
            (1, 1)
        } else {
            match (self.unsched_prios, self.sched_prios) {
                (Some(u), Some(s)) => {
                    let (u, s) = (level("unsched_prios", u)?, level("sched_prios", s)?);
                    if u + s > classes {
                        return Err(bad(
                            "sched_prios",
                            s.to_string(),
                            format!("unsched_prios + sched_prios = {} exceeds network.priorities = {classes}", u + s),
                        ));
                    }
                    (u, s)
                }
                (Some(u), None) => {
                    let u = level("unsched_prios", u)?;
                    (u, classes - u)
                }
                (None, Some(s)) => {
                    let s = level("sched_prios", s)?;
                    (classes - s, s)
                }
                (None, None) => {
                    let u = match cdf {
                        Some(c) => {
                            let f = unsched_byte_fraction(c, rtt_bytes);
                            ((classes as f64 * f).round() as u8).clamp(1, classes - 1)
                        }
                        None => 2.min(classes - 1),
                    };
                    (u, classes - u)
                }
            }
        };
        let cutoffs = match &self.unsched_cutoffs {
            Some(list) => {
                let v: Vec<u64> = list.iter().map(|b| b.0).collect();
                if v.len() != unsched_prios as usize - 1 || v.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(bad(
                        "unsched_cutoffs",
                        format!("{v:?}"),
                        format!(
                            "give {} strictly increasing message sizes (one fewer than the {unsched_prios} unscheduled levels)",
                            unsched_prios - 1
                        ),
                    ));
                }
                v
            }
            None => match cdf {
                Some(c) => unsched_cutoffs(c, rtt_bytes, unsched_prios),
                None => (1..unsched_prios as u64).map(|j| rtt_bytes * j / unsched_prios as u64).collect(),
            },
        };
        let overcommitment = match self.overcommitment {
            Some(0) => {
                return Err(bad(
                    "overcommitment",
                    "0".into(),
                    "must be at least 1 message; remove it for one per scheduled level".into(),
                ))
            }
            Some(k) => k,
            None => sched_prios as u32,
        };
        Ok(HomaParams {
            mtu: net.mtu.0,
            mss: net.mss(),
            header: net.header.0,
            ctrl_size: net.ctrl_size.0,
            rtt_bytes,
            overcommitment,
            classes,
            unsched_prios,
            sched_prios,
            cutoffs,
            from_cdf: cdf.is_some() && self.unsched_cutoffs.is_none(),
            resend_timeout: self.resend_timeout,
            resend_ranges: self.resend_ranges,
            resend_per_peer: self.resend_per_peer.0,
            rank_until_received: self.rank_until_received,
            resend_class: self.resend_class,
            sender_timeout: self.sender_timeout.unwrap_or(self.resend_timeout * 2),
            aeolus: self.aeolus.then_some(AeolusConfig { mode: self.aeolus_mode, probe: self.aeolus_probe }),
            probe_control: self.aeolus_probe_class == ProbeClass::Control,
        })
    }
}

impl HomaParams {
    /// Packets of a message of `size` bytes (at least 1).
    pub fn packets(&self, size: u64) -> u64 {
        size.div_ceil(self.mss).max(1)
    }
    /// Unscheduled packets of a message.
    pub fn unsched_packets(&self, size: u64) -> u64 {
        self.packets(size).min(self.rtt_bytes.div_ceil(self.mss).max(1))
    }
    /// Unscheduled bytes of a message.
    pub fn unsched_bytes(&self, size: u64) -> u64 {
        (self.unsched_packets(size) * self.mss).min(size)
    }
    fn low_priority(&self) -> bool {
        matches!(self.aeolus, Some(AeolusConfig { mode: UnschedMode::LowPriority, .. }))
    }
    /// Unscheduled level of a message of `size` bytes (0 = smallest messages).
    pub fn unsched_level(&self, size: u64) -> u8 {
        self.cutoffs.partition_point(|&c| c < size) as u8
    }
    /// Class of a message's unscheduled packets (and of its Aeolus probe).
    pub fn unsched_prio(&self, size: u64) -> u8 {
        if self.low_priority() {
            return self.classes - 1;
        }
        self.unsched_level(size).min(self.classes - 1)
    }
    /// Class of the Aeolus probe of a message whose unscheduled packets ride `unsched_prio`.
    pub fn probe_prio(&self, unsched_prio: u8) -> u8 {
        if self.probe_control {
            0
        } else {
            unsched_prio
        }
    }
    /// Class of the scheduled packets of the message ranked `rank` (0 = fewest remaining
    /// bytes) among `n` messages being granted.
    pub fn sched_prio(&self, rank: usize, n: usize) -> u8 {
        let s = self.sched_prios as usize;
        let off = (rank + s.saturating_sub(n)).min(s - 1) as u8;
        let base = if self.low_priority() {
            // Just above the lowest class, which holds the unscheduled packets.
            (self.classes - 1).saturating_sub(self.sched_prios)
        } else {
            self.unsched_prios
        };
        (base + off).min(self.classes - 1)
    }
}

// ------------------------------------------------------------------------------------------
// State
// ------------------------------------------------------------------------------------------

/// A packet the sender was asked to send again (RESEND or its own timeout).
#[derive(Clone, Copy, Debug)]
struct Resend {
    idx: u64,
    prio: u8,
    sender_timeout: bool,
    /// This copy replaces Aeolus' retransmission and was paid with grant credit.
    charged: bool,
}

/// Sender side of one message.
#[derive(Debug)]
struct SendMsg {
    dst: NodeId,
    size: u64,
    start: Time,
    npk: u64,
    u_pkts: u64,
    next_new: u64,
    /// Grant offset (bytes) the sender may have charged.
    granted: u64,
    /// Bytes charged against grants: new packets and Aeolus retransmissions.
    charged: u64,
    sched_prio: u8,
    unsched_prio: u8,
    resend: VecDeque<Resend>,
    aeolus: Option<AeolusSender>,
    got_grant: bool,
    /// Heard anything from the receiver about this message.
    heard: bool,
    /// Last transmission of a packet of this message.
    last_sent: Time,
    timer: TimerSlot,
}

impl SendMsg {
    /// Payload bytes of packet `idx` (the last one may be short).
    fn payload_of(&self, idx: u64, mss: u64) -> u64 {
        (self.size - (idx * mss).min(self.size)).min(mss)
    }
}

#[derive(Debug)]
enum Snd {
    Unknown,
    Active(Box<SendMsg>),
    Done,
}

/// Receiver side of one message.
#[derive(Debug)]
struct RecvMsg {
    src: NodeId,
    size: u64,
    start: Time,
    npk: u64,
    got: Vec<u64>,
    got_pkts: u64,
    received: u64,
    granted: u64,
    /// Aeolus: bytes of unscheduled packets declared lost.
    lost_bytes: u64,
    aeolus: Option<AeolusReceiver>,
    last_progress: Time,
    timer: TimerSlot,
    sched_prio: u8,
    unsched_prio: u8,
    /// When the receiver last sent a RESEND round for this message.
    last_resend: Option<Time>,
    /// A RESEND of this message counts against its sender's `resend_per_peer` limit.
    resend_out: bool,
}

impl RecvMsg {
    fn cap(&self) -> u64 {
        self.size + self.lost_bytes
    }
    fn has(&self, i: u64) -> bool {
        self.got.get((i / 64) as usize).is_some_and(|w| w & (1u64 << (i % 64)) != 0)
    }
    fn needs_grant(&self) -> bool {
        self.granted < self.cap()
    }
    /// Whether the receiver expects bytes it has not got: the sender may have charged
    /// min(grant offset, length + lost) bytes, and every one of them is accounted for by a
    /// byte received or an unscheduled byte declared lost (whose retransmission the grant
    /// paid for). False means the message waits for grants (Homa: "we've received
    /// everything that we've granted").
    fn awaits_data(&self) -> bool {
        self.received + self.lost_bytes < self.granted.min(self.cap())
    }
}

#[derive(Debug)]
enum Rcv {
    Unknown,
    Active(Box<RecvMsg>),
    Done,
}

#[derive(Debug, Default)]
struct HostState {
    nic_busy: bool,
    /// Messages this host sends (not yet ACKed).
    sending: Vec<FlowId>,
    /// Messages this host receives (not yet complete).
    receiving: Vec<FlowId>,
    /// RESENDs this host has outstanding, per sending host (indexed by node id; grown when
    /// the first RESEND to a host goes out). Only used with a `resend_per_peer` limit.
    peers: Vec<PeerResends>,
}

/// The RESENDs a receiving host has outstanding to one sending host: (sent at, message),
/// oldest first. One counts until the sender answers it (a packet of that message sent
/// because of it, or BUSY) or `resend_timeout` after it was sent.
#[derive(Debug, Default)]
struct PeerResends {
    out: VecDeque<(Time, FlowId)>,
}

/// What one packet transmission is.
#[derive(Clone, Copy, Debug)]
struct Tx {
    idx: u64,
    prio: u8,
    unscheduled: bool,
    retx: bool,
    sender_timeout: bool,
    resend: bool,
    /// An Aeolus retransmission paid with grant credit ([`DATA_CHARGED`]).
    charged: bool,
}

impl Tx {
    /// A first transmission of packet `idx` (unscheduled or scheduled).
    fn new_data(idx: u64, prio: u8, unscheduled: bool) -> Self {
        Tx { idx, prio, unscheduled, retx: false, sender_timeout: false, resend: false, charged: false }
    }
    /// An Aeolus retransmission (a lost or unacknowledged unscheduled packet) paid by a grant.
    fn aeolus_retx(idx: u64, prio: u8) -> Self {
        Tx { idx, prio, unscheduled: false, retx: true, sender_timeout: false, resend: false, charged: true }
    }
}

/// Homa (optionally with Aeolus) for every host of a run.
pub struct Homa {
    p: HomaParams,
    hosts: Vec<HostState>,
    snd: Vec<Snd>,
    rcv: Vec<Rcv>,
    stats: Vec<FlowStats>,
    scratch: Vec<(u64, Time, FlowId)>,
    lost_scratch: Vec<u32>,
    woken_scratch: Vec<FlowId>,
}

impl Homa {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Homa, HomaConfigError> {
        Ok(Homa::new(HomaConfig::parse(cfg)?.resolve(net)?, net.num_nodes))
    }

    pub fn new(p: HomaParams, num_nodes: usize) -> Homa {
        Homa {
            p,
            hosts: (0..num_nodes).map(|_| HostState::default()).collect(),
            snd: Vec::new(),
            rcv: Vec::new(),
            stats: Vec::new(),
            scratch: Vec::new(),
            lost_scratch: Vec::new(),
            woken_scratch: Vec::new(),
        }
    }

    pub fn params(&self) -> &HomaParams {
        &self.p
    }

    /// Aeolus sender state of `flow` (while the sender holds the message).
    pub fn aeolus_sender(&self, flow: FlowId) -> Option<&AeolusSender> {
        match self.snd.get(flow as usize) {
            Some(Snd::Active(s)) => s.aeolus.as_ref(),
            _ => None,
        }
    }
    /// Grant offset the receiver of `flow` has sent (while the message is incomplete).
    pub fn receiver_granted(&self, flow: FlowId) -> Option<u64> {
        match self.rcv.get(flow as usize) {
            Some(Rcv::Active(r)) => Some(r.granted),
            _ => None,
        }
    }
    /// Bytes the receiving host `host` has granted (including unscheduled bytes) and not yet
    /// received or declared lost, over its incomplete messages: what it believes is in flight
    /// towards it.
    pub fn receiver_outstanding(&self, host: NodeId) -> u64 {
        let Some(h) = self.hosts.get(host as usize) else { return 0 };
        h.receiving
            .iter()
            .filter_map(|&f| match &self.rcv[f as usize] {
                Rcv::Active(r) => Some(r.granted.min(r.cap()).saturating_sub(r.received + r.lost_bytes)),
                _ => None,
            })
            .sum()
    }
    /// Whether the sender of `flow` has been told the message is complete.
    pub fn sender_done(&self, flow: FlowId) -> bool {
        matches!(self.snd.get(flow as usize), Some(Snd::Done))
    }

    fn grow(&mut self, n: usize) {
        if self.snd.len() < n {
            self.snd.resize_with(n, || Snd::Unknown);
            self.rcv.resize_with(n, || Rcv::Unknown);
            self.stats.resize(n, FlowStats::default());
        }
    }

    fn host(&mut self, h: NodeId) -> &mut HostState {
        let h = h as usize;
        if self.hosts.len() <= h {
            self.hosts.resize_with(h + 1, HostState::default);
        }
        &mut self.hosts[h]
    }

    fn emit(&mut self, ctx: &mut Ctx, p: Packet) {
        self.host(ctx.host).nic_busy = true;
        ctx.out.send(p);
    }

    fn ctrl(&self, kind: u8, flow: FlowId, dst: NodeId) -> Packet {
        Packet { dst, flow, size: self.p.ctrl_size as u32, prio: 0, kind, ..Packet::default() }
    }

    // ------------------------------------------------------------------ sender side

    /// Whether message `m` has a packet it may send now.
    fn can_send(m: &SendMsg) -> bool {
        if !m.resend.is_empty() {
            return true;
        }
        let credit = m.charged < m.granted;
        if let Some(a) = &m.aeolus {
            if credit && a.has_lost() {
                return true;
            }
        }
        if m.next_new < m.npk {
            let unsched = match &m.aeolus {
                Some(a) => a.may_send_unscheduled(m.next_new),
                None => m.next_new < m.u_pkts,
            };
            if unsched || credit {
                return true;
            }
            return false;
        }
        credit && m.aeolus.as_ref().is_some_and(|a| a.has_unacked())
    }

    /// Pick the next transmission of message `m` (Aeolus §III-C order for credited packets).
    fn take(m: &mut SendMsg, p: &HomaParams) -> Option<Tx> {
        if let Some(r) = m.resend.pop_front() {
            return Some(Tx {
                idx: r.idx,
                prio: r.prio,
                unscheduled: false,
                retx: true,
                sender_timeout: r.sender_timeout,
                resend: !r.sender_timeout,
                charged: r.charged,
            });
        }
        let credit = m.charged < m.granted;
        if credit {
            if let Some(i) = m.aeolus.as_mut().and_then(|a| a.pop_lost()) {
                m.charged += m.payload_of(i, p.mss);
                return Some(Tx::aeolus_retx(i, m.sched_prio));
            }
        }
        if m.next_new < m.npk {
            let i = m.next_new;
            let unsched = match &m.aeolus {
                Some(a) => a.may_send_unscheduled(i),
                None => i < m.u_pkts,
            };
            if unsched || credit {
                m.next_new += 1;
                m.charged += m.payload_of(i, p.mss);
                if unsched {
                    if let Some(a) = m.aeolus.as_mut() {
                        a.on_sent(i);
                    }
                    return Some(Tx::new_data(i, m.unsched_prio, true));
                }
                return Some(Tx::new_data(i, m.sched_prio, false));
            }
            return None;
        }
        if credit {
            if let Some(i) = m.aeolus.as_mut().and_then(|a| a.pop_unacked()) {
                m.charged += m.payload_of(i, p.mss);
                return Some(Tx::aeolus_retx(i, m.sched_prio));
            }
        }
        None
    }

    /// If the NIC of `ctx.host` is idle, send one data packet of the best message (SRPT).
    fn try_send(&mut self, ctx: &mut Ctx) {
        let h = ctx.host;
        if self.host(h).nic_busy {
            return;
        }
        let mut best: Option<(u64, Time, FlowId)> = None;
        for &f in &self.hosts[h as usize].sending {
            if let Snd::Active(m) = &self.snd[f as usize] {
                if Self::can_send(m) {
                    let key = (m.size - (m.next_new * self.p.mss).min(m.size), m.start, f);
                    if best.is_none_or(|b| key < b) {
                        best = Some(key);
                    }
                }
            }
        }
        let Some((_, _, f)) = best else { return };
        let now = ctx.now;
        let p = &self.p;
        let Snd::Active(m) = &mut self.snd[f as usize] else { return };
        let Some(tx) = Self::take(m, p) else { return };
        m.last_sent = now;
        let payload = m.payload_of(tx.idx, p.mss);
        let mut flags = PacketFlags(PacketFlags::DATA);
        if tx.unscheduled {
            flags.set(aeolus::UNSCHEDULED_FLAGS);
        }
        let mut aux2 = 0;
        if tx.retx {
            aux2 |= DATA_RETX;
            self.stats[f as usize].retx_bytes += payload;
        }
        if tx.sender_timeout {
            aux2 |= DATA_SENDER_TIMEOUT;
        }
        if tx.resend {
            aux2 |= DATA_RESEND;
        }
        if tx.charged {
            aux2 |= DATA_CHARGED;
        }
        let pkt = Packet {
            dst: m.dst,
            flow: f,
            size: (payload + p.header) as u32,
            payload: payload as u32,
            prio: tx.prio,
            flags,
            kind: KIND_DATA,
            seq: tx.idx * p.mss,
            ack: m.size,
            ts: now,
            aux2,
            ..Packet::default()
        };
        let probe = if tx.unscheduled {
            let w = aeolus::Wire { mss: p.mss, ctrl_size: p.ctrl_size };
            m.aeolus
                .as_mut()
                .and_then(|a| a.probe_due())
                .map(|last| aeolus::probe_packet(w, KIND_PROBE, m.dst, f, last, m.size, p.probe_prio(m.unsched_prio)))
        } else {
            None
        };
        self.emit(ctx, pkt);
        if let Some(pr) = probe {
            self.emit(ctx, pr);
        }
    }

    /// Arm (lazily) the sender's nothing-heard timer of `f`.
    fn arm_sender_timer(&mut self, ctx: &mut Ctx, f: FlowId) {
        let t = self.p.sender_timeout;
        let Some(Snd::Active(m)) = self.snd.get_mut(f as usize) else { return };
        if m.heard || m.timer.is_armed() {
            return;
        }
        let at = m.last_sent.max(ctx.now) + t;
        let g = m.timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_SEND, g));
    }

    fn on_sender_timer(&mut self, ctx: &mut Ctx, f: FlowId, gen: u32) {
        let t = self.p.sender_timeout;
        let Some(Snd::Active(m)) = self.snd.get_mut(f as usize) else { return };
        if !m.timer.fire(gen) || m.heard {
            return;
        }
        let due = m.last_sent + t;
        if ctx.now < due {
            let g = m.timer.arm(due);
            ctx.out.timer(due, token(f, TIMER_SEND, g));
            return;
        }
        // Nothing heard about this message: the receiver may not know it. Resend its first
        // packet (a RESEND-like query carrying the length).
        if m.resend.iter().all(|r| !r.sender_timeout) {
            m.resend.push_back(Resend { idx: 0, prio: m.unsched_prio, sender_timeout: true, charged: false });
        }
        m.last_sent = ctx.now;
        let at = ctx.now + t;
        let g = m.timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_SEND, g));
        self.try_send(ctx);
    }

    fn sender_msg(&mut self, f: FlowId) -> Option<&mut SendMsg> {
        match self.snd.get_mut(f as usize) {
            Some(Snd::Active(m)) => Some(m),
            _ => None,
        }
    }

    fn on_grant(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let (p_mss, ctrl, probe_control) = (self.p.mss, self.p.ctrl_size, self.p.probe_control);
        let f = pkt.flow;
        let Some(m) = self.sender_msg(f) else { return };
        m.heard = true;
        m.granted = m.granted.max(pkt.seq);
        m.sched_prio = pkt.rank as u8;
        let mut probe = None;
        if !m.got_grant {
            m.got_grant = true;
            if let Some(a) = m.aeolus.as_mut() {
                a.exit_precredit();
                let w = aeolus::Wire { mss: p_mss, ctrl_size: ctrl };
                probe = a.probe_due().map(|last| {
                    let prio = if probe_control { 0 } else { m.unsched_prio };
                    aeolus::probe_packet(w, KIND_PROBE, m.dst, f, last, m.size, prio)
                });
            }
        }
        if let Some(pr) = probe {
            self.emit(ctx, pr);
        }
        self.try_send(ctx);
    }

    fn on_resend(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let mss = self.p.mss;
        let f = pkt.flow;
        let Some(m) = self.sender_msg(f) else { return };
        m.heard = true;
        let first = pkt.seq / mss;
        let asked_end = (pkt.seq + pkt.ack).div_ceil(mss);
        // A RESEND also grants the range it asks for: a lost GRANT (or, with Aeolus, credit
        // spent on a retransmission the receiver did not count) must not leave the receiver
        // waiting for bytes the sender may not send. Unsent bytes of the range get credit
        // beyond what is charged; without Aeolus this is the grant offset itself.
        let unsent = (pkt.seq + pkt.ack).min(m.size).saturating_sub(m.next_new * mss);
        m.granted = m.granted.max(pkt.seq + pkt.ack).max(m.charged + unsent);
        let end = asked_end.min(m.next_new);
        let mut queued = 0;
        for idx in first..end {
            let took = m.aeolus.as_mut().is_some_and(|a| a.take_over_lost(idx));
            if took {
                // Aeolus found it lost and waits for a credit to resend it: this copy is its
                // one retransmission and spends the credit the receiver granted for it.
                m.charged += m.payload_of(idx, mss);
            }
            match m.resend.iter_mut().find(|r| r.idx == idx) {
                Some(r) => r.charged |= took,
                None => {
                    m.resend.push_back(Resend { idx, prio: pkt.rank as u8, sender_timeout: false, charged: took });
                    queued += 1;
                }
            }
        }
        let busy = asked_end > m.next_new;
        if queued > 0 {
            self.stats[f as usize].timeouts += 1;
        }
        if busy {
            // Part of the range was never sent: the sender is busy with shorter messages.
            let b = self.ctrl(KIND_BUSY, f, pkt.src);
            self.emit(ctx, b);
        }
        self.try_send(ctx);
    }

    /// BUSY at the sender (the receiver knows the message) or at the receiver (the sender
    /// is alive but sending shorter messages first): either way, no timeout for now.
    fn on_busy(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow as usize;
        if ctx.flows.get(f).is_some_and(|i| i.src == ctx.host) {
            if let Some(m) = self.sender_msg(pkt.flow) {
                m.heard = true;
            }
        } else if let Some(Rcv::Active(r)) = self.rcv.get_mut(f) {
            r.last_progress = ctx.now;
            if r.resend_out {
                let src = r.src;
                self.resend_answered(ctx, pkt.flow, src);
            }
        }
    }

    fn on_sender_ack(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        if let Some(st @ Snd::Active(_)) = self.snd.get_mut(f as usize) {
            *st = Snd::Done;
            self.host(ctx.host).sending.retain(|&x| x != f);
        }
    }

    fn on_uack(&mut self, ctx: &mut Ctx, pkt: &Packet, probe: bool) {
        let Some(m) = self.sender_msg(pkt.flow) else { return };
        m.heard = true;
        if let Some(a) = m.aeolus.as_mut() {
            if probe {
                a.on_probe_ack();
            } else {
                a.on_ack(pkt.aux);
            }
        }
        self.try_send(ctx);
    }

    // ------------------------------------------------------------- receiver side

    /// The receiver's state for `f`, created from a packet carrying the length `size`.
    /// Returns false if the message is already complete.
    fn admit(&mut self, ctx: &mut Ctx, f: FlowId, src: NodeId, size: u64) -> bool {
        match self.rcv[f as usize] {
            Rcv::Done => return false,
            Rcv::Active(_) => return true,
            Rcv::Unknown => {}
        }
        let now = ctx.now;
        let start = ctx.flows.get(f as usize).map(|i| i.start).unwrap_or(now);
        let npk = self.p.packets(size);
        let mut r = RecvMsg {
            src,
            size,
            start,
            npk,
            got: vec![0; npk.div_ceil(64) as usize],
            got_pkts: 0,
            received: 0,
            granted: self.p.unsched_bytes(size),
            lost_bytes: 0,
            aeolus: self.p.aeolus.map(|_| AeolusReceiver::new()),
            last_progress: now,
            timer: TimerSlot::default(),
            sched_prio: self.p.sched_prio(0, 1),
            unsched_prio: self.p.unsched_prio(size),
            last_resend: None,
            resend_out: false,
        };
        let at = now + self.p.resend_timeout;
        let g = r.timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_RECV, g));
        self.rcv[f as usize] = Rcv::Active(Box::new(r));
        self.host(ctx.host).receiving.push(f);
        true
    }

    fn on_data(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        let known = matches!(self.rcv[f as usize], Rcv::Active(_));
        if !self.admit(ctx, f, pkt.src, pkt.ack) {
            // Complete already: the sender missed the ACK (or this is a late duplicate).
            let a = self.ctrl(KIND_ACK, f, pkt.src);
            self.emit(ctx, a);
            return;
        }
        if pkt.aux2 & DATA_SENDER_TIMEOUT != 0 {
            if known {
                let b = self.ctrl(KIND_BUSY, f, pkt.src);
                self.emit(ctx, b);
            } else {
                // The sender timeout was needed: the receiver did not know the message.
                self.stats[f as usize].timeouts += 1;
            }
        }
        let mss = self.p.mss;
        let ctrl = self.p.ctrl_size;
        let now = ctx.now;
        let idx = pkt.seq / mss;
        let mut lost = std::mem::take(&mut self.lost_scratch);
        lost.clear();
        let mut uack = None;
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        if let Some(a) = r.aeolus.as_mut() {
            if pkt.flags.has(PacketFlags::UNSCHEDULED) {
                a.on_unscheduled(idx as u32, &mut lost);
                uack =
                    Some(aeolus::ack_packet(aeolus::Wire { mss, ctrl_size: ctrl }, KIND_UACK, r.src, f, idx as u32, 0));
            }
        }
        if pkt.aux2 & DATA_CHARGED != 0 {
            if let Some(a) = r.aeolus.as_mut() {
                // The sender paid for this retransmission with a credit although this side
                // never declared the packet lost: count it, or the grant falls one packet short
                // of what the sender may send (see "Two views of one loss").
                if a.sender_charged(idx as u32) {
                    lost.push(idx as u32);
                }
            }
        }
        for &i in &lost {
            let pay = (r.size - (i as u64 * mss).min(r.size)).min(mss);
            r.lost_bytes += pay;
        }
        let mut new = false;
        if idx < r.npk && !r.has(idx) {
            r.got[(idx / 64) as usize] |= 1u64 << (idx % 64);
            r.got_pkts += 1;
            r.received += pkt.payload as u64;
            r.last_progress = now;
            new = true;
        }
        let complete = r.got_pkts == r.npk;
        let src = r.src;
        // The sender's answer to a RESEND that counts against its per-peer limit.
        let answered = r.resend_out && (complete || pkt.aux2 & DATA_RESEND != 0);
        self.lost_scratch = lost;
        if let Some(u) = uack {
            self.emit(ctx, u);
        }
        if complete {
            self.rcv[f as usize] = Rcv::Done;
            self.host(ctx.host).receiving.retain(|&x| x != f);
            ctx.out.complete(f);
            let a = self.ctrl(KIND_ACK, f, src);
            self.emit(ctx, a);
            self.grant(ctx);
        } else if new || !self.lost_scratch.is_empty() {
            self.grant(ctx);
        }
        if answered {
            self.resend_answered(ctx, f, src);
        }
    }

    fn on_probe(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        let f = pkt.flow;
        if !self.admit(ctx, f, pkt.src, pkt.ack) {
            let a = self.ctrl(KIND_ACK, f, pkt.src);
            self.emit(ctx, a);
            return;
        }
        let (mss, ctrl) = (self.p.mss, self.p.ctrl_size);
        let mut lost = std::mem::take(&mut self.lost_scratch);
        lost.clear();
        let Rcv::Active(r) = &mut self.rcv[f as usize] else { return };
        r.last_progress = ctx.now;
        let src = r.src;
        if let Some(a) = r.aeolus.as_mut() {
            a.on_probe(pkt.aux as u32, &mut lost);
        }
        for &i in &lost {
            r.lost_bytes += (r.size - (i as u64 * mss).min(r.size)).min(mss);
        }
        self.lost_scratch = lost;
        let ack = aeolus::ack_packet(aeolus::Wire { mss, ctrl_size: ctrl }, KIND_PROBE_ACK, src, f, pkt.aux as u32, 0);
        self.emit(ctx, ack);
        self.grant(ctx);
    }

    /// Homa's grant decision at the receiving host: SRPT over the messages that need
    /// grants, top `overcommitment` of them, each kept `rtt_bytes` ahead of what arrived.
    fn grant(&mut self, ctx: &mut Ctx) {
        let h = ctx.host as usize;
        let mut cand = std::mem::take(&mut self.scratch);
        cand.clear();
        let keep = self.p.rank_until_received;
        for &f in &self.hosts[h].receiving {
            if let Rcv::Active(r) = &self.rcv[f as usize] {
                // With `rank_until_received` a message granted beyond its unscheduled bytes
                // stays ranked (and holds its slot) while its granted bytes are on the way.
                if r.needs_grant() || (keep && r.granted > self.p.unsched_bytes(r.size)) {
                    cand.push((r.size - r.received, r.start, f));
                }
            }
        }
        cand.sort_unstable();
        let k = (self.p.overcommitment as usize).min(cand.len());
        let mut woken = std::mem::take(&mut self.woken_scratch);
        woken.clear();
        for (rank, &(_, _, f)) in cand[..k].iter().enumerate() {
            let prio = self.p.sched_prio(rank, k);
            let rtt = self.p.rtt_bytes;
            let Rcv::Active(r) = &mut self.rcv[f as usize] else { continue };
            let target = r.cap().min(r.received + r.lost_bytes + rtt);
            r.sched_prio = prio;
            if target > r.granted {
                if !r.awaits_data() {
                    // It was waiting for grants: its no-progress clock starts below.
                    woken.push(f);
                }
                r.granted = target;
                let src = r.src;
                let mut g = self.ctrl(KIND_GRANT, f, src);
                g.seq = target;
                g.rank = prio as u32;
                self.emit(ctx, g);
            }
        }
        if !woken.is_empty() {
            // A message that waited for grants expects data again from now on, but its
            // packets queue at this host's downlink behind every byte the host has already
            // asked for (granted or unscheduled, not yet here): its no-progress clock starts
            // when the downlink could have delivered all of them.
            let outstanding = self.receiver_outstanding(ctx.host);
            for &f in &woken {
                let rate = ctx.flows.get(f as usize).map(|i| i.path_rate);
                if let Rcv::Active(r) = &mut self.rcv[f as usize] {
                    r.last_progress = ctx.now + rate.map_or(Time::ZERO, |x| x.tx_time(Bytes(outstanding)));
                }
            }
        }
        self.woken_scratch = woken;
        self.scratch = cand;
    }

    fn on_recv_timer(&mut self, ctx: &mut Ctx, f: FlowId, gen: u32) {
        let t = self.p.resend_timeout;
        let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) else { return };
        if !r.timer.fire(gen) {
            return;
        }
        if !r.awaits_data() {
            // Everything granted (unscheduled bytes included) is here or declared lost with
            // its retransmission not yet paid for: the message waits for grants, not for the
            // network. Its clock stays at zero until a grant makes it expect bytes again.
            r.last_progress = ctx.now;
        }
        let due = r.last_progress + t;
        if ctx.now < due {
            let g = r.timer.arm(due);
            ctx.out.timer(due, token(f, TIMER_RECV, g));
            return;
        }
        if self.p.resend_per_peer == 0 {
            self.send_resend(ctx, f);
            return;
        }
        // One limited pool of RESENDs per sending host: hand its free slots to the due
        // messages of that host that were asked least recently (this one among them).
        let src = r.src;
        self.resend_round(ctx, src);
        if let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) {
            if r.last_resend != Some(ctx.now) {
                // Still waiting for a slot: look again when the oldest outstanding RESEND
                // to that host stops counting (an answer may free it earlier).
                let free_at =
                    self.hosts[ctx.host as usize].peers[src as usize].out.front().map_or(ctx.now + t, |e| e.0 + t);
                let g = r.timer.arm(free_at);
                ctx.out.timer(free_at, token(f, TIMER_RECV, g));
            }
        }
    }

    /// Whether message `r` may get a RESEND now: it expects bytes, none came for
    /// `resend_timeout`, and its last RESEND (if any) was at least that long ago.
    fn resend_due(r: &RecvMsg, now: Time, t: Time) -> bool {
        r.awaits_data() && r.last_progress + t <= now && r.last_resend.is_none_or(|x| x + t <= now) && !r.resend_out
    }

    /// Per-peer limit (`resend_per_peer` > 0): forget the RESENDs to `peer` that stopped
    /// counting, then, while fewer than the limit remain, send one to the due message of
    /// `peer` whose last RESEND is oldest (never asked first, then arrival, then flow id): the
    /// rotation among a peer's messages.
    fn resend_round(&mut self, ctx: &mut Ctx, peer: NodeId) {
        let t = self.p.resend_timeout;
        let now = ctx.now;
        let limit = self.p.resend_per_peer as usize;
        let h = ctx.host as usize;
        if self.hosts.len() <= h {
            self.hosts.resize_with(h + 1, HostState::default);
        }
        loop {
            let host = &mut self.hosts[h];
            if host.peers.len() <= peer as usize {
                host.peers.resize_with(peer as usize + 1, PeerResends::default);
            }
            let q = &mut host.peers[peer as usize].out;
            while let Some(&(at, g)) = q.front() {
                if at + t > now {
                    break;
                }
                q.pop_front();
                if let Some(Rcv::Active(r)) = self.rcv.get_mut(g as usize) {
                    r.resend_out = false;
                }
            }
            if q.len() >= limit {
                return;
            }
            let mut best: Option<(Option<Time>, Time, FlowId)> = None;
            for &g in &host.receiving {
                if let Some(Rcv::Active(r)) = self.rcv.get(g as usize) {
                    if r.src == peer && Self::resend_due(r, now, t) {
                        let key = (r.last_resend, r.start, g);
                        if best.is_none_or(|b| key < b) {
                            best = Some(key);
                        }
                    }
                }
            }
            let Some((_, _, g)) = best else { return };
            self.hosts[h].peers[peer as usize].out.push_back((now, g));
            if let Some(Rcv::Active(r)) = self.rcv.get_mut(g as usize) {
                r.resend_out = true;
            }
            self.send_resend(ctx, g);
        }
    }

    /// The sender answered a RESEND of `f` (a packet it sent because of it, or BUSY): that
    /// RESEND stops counting against the sender's limit, and the freed slot goes to another
    /// due message of the same sender.
    /// Also when `f` completes with a RESEND outstanding. `src` is its sender.
    fn resend_answered(&mut self, ctx: &mut Ctx, f: FlowId, src: NodeId) {
        if let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) {
            r.resend_out = false;
        }
        if let Some(p) = self.hosts.get_mut(ctx.host as usize).and_then(|x| x.peers.get_mut(src as usize)) {
            p.out.retain(|e| e.1 != f);
        }
        self.resend_round(ctx, src);
    }

    /// One RESEND round for message `f`: ask for the first missing packet range, or every
    /// one (`resend_ranges`), below the offset the sender's new data may have reached;
    /// re-arm its timer one `resend_timeout` later.
    fn send_resend(&mut self, ctx: &mut Ctx, f: FlowId) {
        let t = self.p.resend_timeout;
        let mss = self.p.mss;
        let ctrl = self.p.ctrl_size;
        let first_only = self.p.resend_ranges == ResendRanges::First;
        let Some(Rcv::Active(r)) = self.rcv.get_mut(f as usize) else { return };
        // Bytes the receiver expects have not arrived for resend_timeout: ask for missing
        // packets the sender may have sent, i.e. below the new-data offset min(length,
        // grant - lost) (each declared-lost unscheduled byte's retransmission took one byte
        // of the grant), declared-lost packets included.
        let expected = r.size.min(r.granted.saturating_sub(r.lost_bytes)).div_ceil(mss).min(r.npk);
        let prio = if self.p.resend_class == ResendClass::Highest {
            0
        } else if r.size > self.p.unsched_bytes(r.size) {
            r.sched_prio
        } else {
            r.unsched_prio
        };
        r.last_resend = Some(ctx.now);
        let at = ctx.now + t;
        let g = r.timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_RECV, g));
        let (src, size) = (r.src, r.size);
        let mut i = 0;
        while i < expected {
            let Rcv::Active(r) = &self.rcv[f as usize] else { return };
            if r.has(i) {
                i += 1;
                continue;
            }
            let a = i;
            while i < expected && !r.has(i) {
                i += 1;
            }
            let first = a * mss;
            let end = (i * mss).min(size);
            let mut q =
                Packet { dst: src, flow: f, size: ctrl as u32, prio: 0, kind: KIND_RESEND, ..Packet::default() };
            q.seq = first;
            q.ack = end - first;
            q.rank = prio as u32;
            self.emit(ctx, q);
            if first_only {
                break;
            }
        }
    }
}

impl Transport for Homa {
    fn name(&self) -> &'static str {
        "homa"
    }

    fn start_flow(&mut self, ctx: &mut Ctx, f: FlowId) {
        self.grow(ctx.flows.len().max(f as usize + 1));
        let info: &FlowInfo = &ctx.flows[f as usize];
        let (dst, size, start) = (info.dst, info.size.0, info.start);
        let p = &self.p;
        let u_pkts = p.unsched_packets(size);
        let m = SendMsg {
            dst,
            size,
            start,
            npk: p.packets(size),
            u_pkts,
            next_new: 0,
            granted: p.unsched_bytes(size),
            charged: 0,
            sched_prio: p.sched_prio(0, 1),
            unsched_prio: p.unsched_prio(size),
            resend: VecDeque::new(),
            aeolus: p.aeolus.map(|c| AeolusSender::new(u_pkts as u32, &c)),
            got_grant: false,
            heard: false,
            last_sent: ctx.now,
            timer: TimerSlot::default(),
        };
        self.snd[f as usize] = Snd::Active(Box::new(m));
        self.host(ctx.host).sending.push(f);
        self.try_send(ctx);
        self.arm_sender_timer(ctx, f);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.grow(ctx.flows.len().max(pkt.flow as usize + 1));
        match pkt.kind {
            KIND_DATA => self.on_data(ctx, pkt),
            KIND_PROBE => self.on_probe(ctx, pkt),
            KIND_GRANT => self.on_grant(ctx, pkt),
            KIND_RESEND => self.on_resend(ctx, pkt),
            KIND_ACK => self.on_sender_ack(ctx, pkt),
            KIND_BUSY => self.on_busy(ctx, pkt),
            KIND_UACK => self.on_uack(ctx, pkt, false),
            KIND_PROBE_ACK => self.on_uack(ctx, pkt, true),
            _ => {}
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, tok: u64) {
        let (f, kind, gen) = untoken(tok);
        self.grow(f as usize + 1);
        match kind {
            TIMER_RECV => self.on_recv_timer(ctx, f, gen),
            TIMER_SEND => self.on_sender_timer(ctx, f, gen),
            _ => {}
        }
    }

    fn on_nic_idle(&mut self, ctx: &mut Ctx) {
        self.host(ctx.host).nic_busy = false;
        self.try_send(ctx);
    }

    fn wants_nic_idle(&self) -> bool {
        true
    }

    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.stats.get(flow as usize).copied().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::PacketArena;
    use crate::queue::selective::{SelectiveDrop, SelectiveDropConfig, DROP_SELECTIVE};
    use crate::queue::{PortEffects, QueueDisc};
    use crate::transport::Actions;
    use crate::units::Rate;
    use serde_json::json;

    const MSS: u64 = 1460;
    /// Base RTT of a one-switch path at 10 Gbps with 1 us links.
    const RTT_PS: u64 = 6_502_400;

    fn net() -> NetInfo {
        NetInfo::for_tests(1500, Time(RTT_PS), Rate::gbps(10))
    }

    fn flows(spec: &[(NodeId, NodeId, u64)]) -> Vec<FlowInfo> {
        spec.iter()
            .enumerate()
            .map(|(i, &(src, dst, size))| FlowInfo {
                id: i as FlowId,
                src,
                dst,
                size: Bytes(size),
                start: Time::ZERO,
                base_rtt: Time(RTT_PS),
                path_rate: Rate::gbps(10),
                host_rate: Rate::gbps(10),
                deadline: None,
                background: false,
            })
            .collect()
    }

    fn homa(cfg: serde_json::Value) -> Homa {
        Homa::from_config(&cfg, &net()).unwrap()
    }

    fn call(host: NodeId, now: Time, fl: &[FlowInfo], f: impl FnOnce(&mut Ctx)) -> Actions {
        let mut out = Actions::new();
        f(&mut Ctx { now, host, flows: fl, out: &mut out });
        out
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
        for (k, expect) in [(1usize, vec![(2u32, 7u32)]), (2, vec![(1, 7), (2, 6)]), (3, vec![(0, 7), (1, 6), (2, 5)])]
        {
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
        let a = call(0, Time::ZERO, &fl, |c| h.start_flow(c, 0));
        let mut sent = a.sends.clone();
        sent.extend(drain(&mut h, &fl, 0, Time::ns(1200), 6));
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
        let a = call(0, Time::ZERO, &fl, |c| h.start_flow(c, 0));
        let mut sent = a.sends.clone();
        sent.extend(drain(&mut h, &fl, 0, Time::ns(1200), 6));
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
        let a = call(0, Time::ZERO, &fl, |c| h.start_flow(c, 0));
        let mut sent = a.sends.clone();
        sent.extend(drain(&mut h, &fl, 0, Time::ns(1200), 3));
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
        let retx: Vec<Packet> =
            drain(&mut h, &fl, 0, Time::us(9), 5).into_iter().filter(|p| p.kind == KIND_DATA).collect();
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
        let a = call(0, Time::ZERO, &fl, |c| h.start_flow(c, 0));
        let mut sent = a.sends.clone();
        sent.extend(drain(&mut h, &fl, 0, Time::ns(1200), 4));
        let got: Vec<(u8, u64, u8)> = sent.iter().map(|p| (p.kind, p.seq / MSS, p.prio)).collect();
        assert_eq!(got, vec![(KIND_DATA, 0, 7), (KIND_DATA, 1, 7), (KIND_DATA, 2, 7), (KIND_PROBE, 2, 0)]);
        // The default keeps the probe behind the burst, in the lowest class.
        let mut h = homa(json!({"aeolus": true, "aeolus_mode": "low_priority", "unsched_prios": 2}));
        let a = call(0, Time::ZERO, &fl, |c| h.start_flow(c, 0));
        let mut sent = a.sends.clone();
        sent.extend(drain(&mut h, &fl, 0, Time::ns(1200), 4));
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
        let a = call(0, Time::ZERO, &fl, |c| h.start_flow(c, 0));
        let mut sent = a.sends.clone();
        sent.extend(drain(&mut h, &fl, 0, Time::ns(1200), 4));
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
}
