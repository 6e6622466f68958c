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
//! # A lost packet keeps its share of the window
//! Two rules of Homa together, both as in HomaModule (its grant code and its protocol
//! description): the grant offset is the bytes *received* plus `rtt_bytes`, so a packet lost in
//! the network still counts as granted and on its way; and the receiver asks for it only after
//! `resend_timeout` in which no new data of the message arrived. A long message that loses k
//! packets but keeps receiving others therefore runs with `rtt_bytes` less k packets in flight,
//! and nothing repairs that until it falls silent: when the sender has sent all it was granted
//! (the message's end), or pauses for longer than the timer. Homa assumes losses are rare; with
//! switch buffers far below `rtt_bytes` they are not. Measured in `repro/rpo_fig1c_rtt`
//! (8-packet buffers, `rtt_bytes` 68,756 B = 48 packets, 5 ms timer): f1 lost 46 unscheduled
//! packets (67,160 B) at start-up where its and f2's first RTTs met at B -> C, and then sent
//! 0.50-0.57 Gbps to the end of the run, its remaining 1,596 B window per 41 us round trip (2
//! whole packets: the sender sends a packet while any granted byte of it is unsent); its
//! largest gap between arrivals was 32 us, so the 5 ms timer never ran out and its holes were
//! never repaired. f2 lost 48 scheduled packets (70,080 B) at A -> B when the by-passing
//! flows' unscheduled bursts arrived at 10 ms: more than `rtt_bytes`, so nothing of it was in
//! flight; the message fell silent, the RESEND came 5 ms later, and its 48 retransmissions
//! were lost again in A -> B's full queue, every 5 ms until the by-passing flows stopped. B -> C
//! carried 0.059 of its capacity during the by-pass (0.987 after it). A 100 us timer did not
//! help (0.060); a 20 us one kept B -> C full during the by-pass, with 63,929 drops instead of
//! 526; with 1 MB buffers (no loss) B -> C was full. Test:
//! `lost_packets_hold_part_of_the_window_and_get_no_resend_while_later_packets_arrive`.
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

mod config;
pub use config::*;
mod receiver;
mod sender;
#[cfg(test)]
mod tests;

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
