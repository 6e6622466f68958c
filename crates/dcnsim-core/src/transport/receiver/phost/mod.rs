//! pHost: receiver-driven transport with per-packet tokens (Gao, Narayan, Kumar, Agarwal,
//! Ratnasamy, Shenker, "pHost: Distributed Near-Optimal Datacenter Transport Over Commodity
//! Network Fabric", CoNEXT 2015), optionally with the Aeolus first-RTT building block (Hu et
//! al., IEEE/ACM ToN 2021, §III; see "pHost + Aeolus").
//!
//! Sources. The paper's full text is not in this project's reference corpora, so no section
//! of it is cited here. The mechanism follows the paper's design as the task states it and
//! as the papers that use pHost as a baseline summarise it (Aeolus §II-D, RPO §I-II); every number comes from the authors' own public simulator
//! (NetSys/simulator: the "capability" flow and host its pHost runs use, and the pHost
//! configuration in its `py/run_experiments.py`). Each parameter says where its default
//! comes from.
//!
//! # What is modelled
//! - **RTS**: at flow start the source sends a request-to-send carrying the flow
//!   size to the destination (control class). Every data packet also carries the flow size,
//!   so a lost RTS is replaced by the first data packet that arrives.
//! - **Free tokens** (the first BDP of every flow): the source holds, at flow start, one token for
//!   each of the first `free_tokens` packets (one BDP) and sends them at once, back to back at
//!   line rate, without waiting for the destination. This phase is isolated in
//!   [`FreeTokens`] so that a generic Aeolus building block can flag these packets
//!   `UNSCHEDULED` (via [`FreeTokens::flags`]) and recognise the last one ([`is_free_data`],
//!   [`FreeTokens::count`]) to add its probe; everything else in pHost is unchanged by that.
//! - **Tokens**: each destination emits one token per MTU transmission time at its
//!   line rate (a paced timer), to one flow at a time. A token names one packet of the flow
//!   (so the same mechanism retransmits), carries the data priority the destination wants,
//!   the flow's remaining bytes and a time to live. The source sends exactly one data packet
//!   per token it uses.
//! - **Destination policy**: SRPT. Among its flows with a pending RTS that are
//!   eligible (below), the destination gives the next token to the flow with the fewest
//!   bytes still missing (ties: earlier start, then lower flow id).
//! - **Source policy**: among its flows that hold an unexpired token, the source
//!   sends for the flow with the fewest remaining bytes (as last reported by that flow's
//!   destination in a token; ties: earlier start, lower id), using that flow's token that
//!   expires first. Expired tokens are discarded, never used (so a source cannot hoard
//!   tokens it does not use). The source decides only when its NIC is idle (pull-based: at most one data
//!   packet waits in the NIC), so its choice uses the tokens it holds at that moment.
//! - **Downgrade of unresponsive sources**: a destination counts, per flow, the tokens
//!   it sent that are not yet answered (tokens issued after the newest token whose data
//!   packet arrived). A flow with `downgrade_tokens` or more unanswered tokens is skipped, so
//!   the tokens go to other flows, until data arrives again or `downgrade_time` has passed
//!   since its last token; then it gets one more token (a probe) and, if that is not
//!   answered either, waits `downgrade_time` again.
//! - **Retransmission** (receiver-driven): once a destination has issued a token for
//!   every packet of a flow, it waits `retx_timeout` after the last token; then it issues
//!   tokens again, in SRPT order with the other flows, for each packet still missing (one
//!   round over the missing packets), and waits again after the round's last token. A lost
//!   data packet, a token lost or expired at the source and a free packet that was never
//!   sent are all repaired this way. Each round counts as one timeout in [`FlowStats`].
//! - **Completion**: when the destination holds every byte it reports the flow complete and
//!   sends an ACK (control class); the source then forgets the flow.
//! - **Priorities** (commodity switches with a few strict-priority classes): control
//!   packets (RTS, token, ACK) in `ctrl_prio` (0, highest; the authors' simulator sends all
//!   control packets in its top class); free-token data in `free_prio` (1); token-triggered
//!   data in `data_prio` (2). Unscheduled (free-token) data goes ahead of scheduled data:
//!   Aeolus §II-D counts pHost, with Homa, among the designs that give first-RTT packets
//!   precedence over scheduled ones. The authors' simulator, as configured by its script, ends up with all
//!   data in one class below control (its third level applies to flows above
//!   `capability_prio_thresh`, which the script leaves at 0): `free_prio = 2` reproduces
//!   that. The destination writes `data_prio` into each token (the simulator fixes the class
//!   at the source; the effect is the same).
//!
//! # Configuration (`protocol = "phost"`)
//! T below is the MTU transmission time at the fastest host rate (`network.mtu` at
//! `NetInfo::max_host_rate`; 1.2 us for 1500 B at 10 Gbps). The authors' simulator states
//! its timers in units of T.
//!
//! | field | default | meaning (authors' simulator name) |
//! |---|---|---|
//! | `free_tokens` | BDP in packets: ceil(max host rate x max base RTT / MTU) | free tokens per flow (`capability_initial` = 8, the BDP of their topology) |
//! | `free_tokens_short_only` | false | true: only flows of at most `free_tokens` packets get free tokens (what the authors' simulator does) |
//! | `reserve_free` | true | the destination keeps token-driven data out of the downlink time announced free packets will take (see below; the authors' `CAPABILITY_HOLD`) |
//! | `token_ttl` | 1.5 T | lifetime of a token at the source (`capability_timeout` = 1.5) |
//! | `downgrade_tokens` | BDP in packets (as `free_tokens`) | unanswered tokens that downgrade a flow (`capability_window` = 8 = BDP) |
//! | `downgrade_time` | 25 T | how long a downgraded flow is skipped (`capability_window_timeout` = 25) |
//! | `retx_timeout` | max(9 T, max base RTT + 2 T) | wait after a flow's last token before re-issuing tokens for missing packets (`capability_resend_timeout` = 9), see below |
//! | `rts_timeout` | 10 x max base RTT | a source that heard nothing (no token, no ACK) for this long resends its RTS |
//! | `ctrl_prio`, `free_prio`, `data_prio` | 0, 1, 2 (clamped to `network.priorities` - 1); with `aeolus`, `free_prio` = `data_prio` | classes, see above |
//! | `aeolus` | false | add the Aeolus building block (see below); run with `network.queue_policy = "selective_drop"` |
//! | `aeolus_probe` | true | with `aeolus`: false = Aeolus without the probe (Aeolus Fig. 22) |
//!
//! # pHost + Aeolus (`aeolus = true`)
//! The free-token packets (the first BDP) are Aeolus' unscheduled packets (§III-A): flagged
//! `UNSCHEDULED` through [`FreeTokens::flags`], so a `selective_drop` switch drops them above
//! its threshold while token-driven (scheduled) packets are only dropped on overflow. Tokens
//! are Aeolus' credits. Mapping and choices:
//! - **One FIFO** (§III-B): by default free data rides the scheduled data's class
//!   (`free_prio` = `data_prio`), so the per-queue threshold sees the scheduled backlog and
//!   scheduled packets are never behind unscheduled ones in priority. (pHost's own default
//!   puts free data above scheduled data, the opposite of Aeolus' "scheduled packet first";
//!   setting `free_prio` explicitly then needs `selective.per_port = true`.)
//! - **End of the free phase and probe** (§III-A, §III-C): the source leaves the free phase
//!   when it has sent its last free packet, when its free tokens expired unused, or at once
//!   when its first (scheduled) token arrives; in the last case the free tokens it still
//!   holds are discarded and those packets go as scheduled packets. Right after the last
//!   free packet sent (same class, so behind it in every FIFO) it sends the probe, carrying
//!   that packet's index and the flow size (a destination that lost the RTS and every free
//!   packet learns the flow from it). A flow whose free tokens all expired unsent sends no
//!   probe (there is no last packet to name); pHost's retransmission round covers it.
//! - **Loss detection at the destination**: a pHost token names the packet it pays for, so
//!   the destination, not the source, decides what is resent; it therefore applies Aeolus'
//!   inference itself ([`AeolusReceiver`]): a free packet's arrival proves the earlier free
//!   packets not held lost, and the probe proves it for the tail; the probe also tells it
//!   that free packets after the one it names were never sent. Aeolus' per-packet ACKs and
//!   probe ACK exist to carry this knowledge to a source that picks what to resend; a pHost
//!   source never picks, so they are not sent (this saves one 64 B packet per free packet
//!   on the reverse path and changes no decision).
//! - **Resent once, scheduled, first** (§III-C order): each packet declared lost (or unsent)
//!   gets exactly one token, ahead of tokens for new packets, subject to pHost's usual
//!   start time, downgrade and SRPT rules. If that scheduled copy is lost as well, pHost's
//!   retransmission round (`retx_timeout` after the flow's last token) is the last resort;
//!   a token for a lost packet restarts that wait.
//! - **Downlink reservation** (`reserve_free`): free packets declared lost release the
//!   downlink time booked for them, since they will not arrive (without this a 16-to-1
//!   incast idles the receiver link for the dropped packets' booked time: measured 8.5%
//!   above the line-rate bound instead of 1.4%).
//! - Without the probe (`aeolus_probe = false`) tail losses are found by the
//!   retransmission round.
//!
//! # Choices where the paper leaves room
//! - **Token lifetime** is counted from the token's arrival at the source: the token carries
//!   its TTL and the source computes the expiry (the authors' simulator does this; an
//!   absolute expiry stamped at the destination would, with a 1.5 T lifetime, expire before
//!   the token even arrives).
//! - **Free-token expiry**: free tokens expire `free_tokens x T + token_ttl` after the flow
//!   starts (the authors' simulator), i.e. they are meant to be used in the initial burst.
//! - **When scheduled tokens start.** With free tokens for every flow (the first BDP, as the
//!   paper describes), a destination that issued tokens as soon as the RTS arrives would have
//!   them reach the source while it is still sending its free burst: the source can send one
//!   packet per T, so one of the two streams would expire and need a retransmission round.
//!   The destination therefore starts a flow's scheduled tokens at t1 + n x T_src - RTT,
//!   where t1 is the arrival of the flow's first free packet, n its free-packet count, T_src
//!   the MTU time at the source's rate and RTT the flow's base RTT: the first token then
//!   reaches the source just as its free burst ends and its data follows the last free packet
//!   back to back (before any free packet arrives, the provisional start is RTS arrival +
//!   n x T_src). The authors' simulator avoids the overlap differently: flows longer than
//!   one BDP get no free tokens at all (`free_tokens_short_only = true`).
//! - **Free data on the downlink** (`reserve_free`). Free packets are unscheduled: tokens at
//!   line rate plus a free burst overfill the destination's link, and since tokens keep the
//!   link exactly busy the excess never drains. In a 16-to-1 incast of 100 KB flows without
//!   it, the 96 free packets stay queued for the whole run, every token's loop takes ~115 us,
//!   all flows get downgraded in turn and retransmit spuriously, and SRPT order is lost
//!   (all 16 finish within 1.12-1.40 ms). So each RTS books n x T of the downlink after what
//!   is already booked (the data of tokens issued so far, each token booking until its issue
//!   time + the flow's base RTT), and a flow's tokens start no earlier than the end of the
//!   booked free time minus its base RTT: their data then arrives just after the free data.
//!   The authors' simulator has the same idea as a slot count (`CAPABILITY_HOLD`: skip one
//!   token slot per announced free packet), disabled there because their long flows send no
//!   free packets. `reserve_free = false` gives the destination that ignores free data.
//! - **Downgrade** counts only tokens the destination actually sent (free tokens are not
//!   sent, and their data may legitimately queue behind other flows' free bursts). "Tokens
//!   after the newest answered one" is the authors' simulator's gap count.
//! - **Retransmission timeout floor.** By our estimate the authors' 9 T (2.7 us) was about
//!   one base RTT plus a packet or two in the configuration their script runs (40 Gbps,
//!   0.2 us per link, cut-through switches, 4-link paths); with longer links a fixed 9 T
//!   fires before the last token's data can be back (1 us links at 10 Gbps: base
//!   RTT 11.1 us > 9 T = 10.8 us) and every flow would retransmit its tail. The default is
//!   therefore at least the largest base RTT plus 2 T (the sender's and the receiver's NIC
//!   may each be busy with one packet).
//! - **Retransmission timer** for a flow sent entirely on free tokens: RTS arrival +
//!   n x T_src + `retx_timeout` (the authors wait twice the free burst's duration).
//! - **Receiver pacing rate**: the destination paces at the fastest host rate of the network
//!   (hosts usually share one rate; the transport is not told each host's own rate).
//! - **RTS retransmission and the completion ACK** are not described in the paper (its
//!   simulator assumes control packets are never lost). Here a source resends its RTS if it
//!   heard nothing for `rts_timeout`; a destination answers an RTS for a flow it already
//!   completed with the ACK again, so a lost ACK is repaired too.
//! - **Source NIC**: the source only hands a data packet to its NIC when the NIC is idle;
//!   control packets (RTS, its own tokens as a destination) go in whenever they are made and
//!   overtake queued data by priority.
//!
//! # Packet fields (this module's meaning)
//! `kind`: [`KIND_RTS`], [`KIND_TOKEN`], [`KIND_DATA`], [`KIND_ACK`].
//! RTS: `seq` = flow size. Token: `seq` = byte offset of the packet to send, `aux` = token
//! serial, `ack` = bytes the destination still misses, `ts` = token TTL, `rank` = data
//! priority. Data: `seq`/`payload` as usual, `aux` = serial of the token used, `ack` = flow
//! size, `aux2` bit [`AUX2_FREE`] = sent on a free token, `ts` = send time. Aeolus probe
//! ([`KIND_PROBE`], `ctrl_size`, class `free_prio`): `seq`/`aux` = offset/index of the last
//! free packet sent, `ack` = flow size.

use crate::config::FieldError;
use crate::packet::{FlowId, NodeId, Packet, PacketFlags};
use crate::transport::aeolus::{self, AeolusConfig, AeolusReceiver, AeolusSender, UnschedMode};
use crate::transport::blocks::bitmap;
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

/// Request to send (source -> destination), `seq` = flow size.
pub const KIND_RTS: u8 = 1;
/// Token (destination -> source).
pub const KIND_TOKEN: u8 = 2;
/// Data packet.
pub const KIND_DATA: u8 = 3;
/// Completion ACK (destination -> source).
pub const KIND_ACK: u8 = 4;
/// `aux2` bit of a data packet sent on a free token.
pub const AUX2_FREE: u32 = 1;
/// Aeolus probe (source -> destination, after the last free-token packet).
pub const KIND_PROBE: u8 = 5;

const TIMER_PACER: u8 = 1;
const TIMER_RTS: u8 = 2;

/// True for a pHost data packet sent on a free token (the first-BDP phase).
pub fn is_free_data(p: &Packet) -> bool {
    p.kind == KIND_DATA && p.is_data() && p.aux2 & AUX2_FREE != 0
}

/// The first-BDP phase ("free tokens"), kept apart from the token machinery so that a
/// generic Aeolus building block can reuse pHost with its own marking of these packets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FreeTokens {
    /// Packets a flow sends at start without tokens (one BDP).
    pub packets: u64,
    /// Only flows of at most `packets` packets get free tokens.
    pub short_flows_only: bool,
    /// Priority class of free-token data.
    pub prio: u8,
    /// Extra [`PacketFlags`] bits set on free-token data (none for pHost; an Aeolus wrapper
    /// sets `PacketFlags::UNSCHEDULED`).
    pub flags: u16,
}

impl FreeTokens {
    /// Free tokens of a flow of `flow_pkts` packets (packets 0..count are sent on them).
    pub fn count(&self, flow_pkts: u64) -> u64 {
        if self.short_flows_only && flow_pkts > self.packets {
            0
        } else {
            flow_pkts.min(self.packets)
        }
    }
    /// One BDP in MTU-sized packets, rounded up.
    pub fn bdp_packets(net: &NetInfo) -> u64 {
        net.max_host_rate.bdp(net.max_base_rtt).0.div_ceil(net.mtu.0.max(1))
    }
}

/// A token held by a source.
#[derive(Clone, Copy, Debug)]
struct Tok {
    pkt: u64,
    serial: u64,
    expiry: Time,
    prio: u8,
    free: bool,
}

/// Source-side state of one flow.
#[derive(Debug)]
struct SendFlow {
    dst: NodeId,
    size: u64,
    start: Time,
    /// Bytes the destination still misses, from its latest token (the flow size at first).
    remaining: u64,
    tokens: Vec<Tok>,
    /// Packets sent at least once (bitmap).
    sent: Vec<u64>,
    last_heard: Time,
    rts_timer: TimerSlot,
    /// Aeolus: the free-token packets are its unscheduled packets (probe timing).
    aeolus: Option<AeolusSender>,
}

#[derive(Debug)]
enum Snd {
    Unknown,
    Active(Box<SendFlow>),
    Done,
}

/// Destination-side state of one flow.
#[derive(Debug)]
struct RecvFlow {
    src: NodeId,
    size: u64,
    start: Time,
    n_pkts: u64,
    n_free: u64,
    /// Packets received (bitmap, grown on demand).
    got: Vec<u64>,
    got_pkts: u64,
    got_bytes: u64,
    /// Token serials used so far, free tokens (serials 0..n_free) included.
    issued: u64,
    /// 1 + the newest token serial answered by a data packet.
    answered: u64,
    /// Next packet that never had a token.
    next_new: u64,
    /// In a retransmission round: the next packet index to consider.
    cursor: Option<u64>,
    /// When the next retransmission round may start (once every packet had a token).
    retx_at: Time,
    /// Scheduled tokens start no earlier than this (end of the free burst).
    sched_from: Time,
    sched_refined: bool,
    /// When the destination last sent this flow a token.
    last_token: Time,
    /// Base RTT of the flow's path (token issue to data arrival when nothing queues).
    rtt: Time,
    /// Aeolus: which free-token packets arrived or are known lost.
    aeolus: Option<AeolusReceiver>,
    /// Aeolus: free-token packets known lost (or never sent, per the probe), each to get
    /// one token ahead of new packets.
    lost: VecDeque<u64>,
}

impl RecvFlow {
    fn next_missing(&self, from: u64) -> Option<u64> {
        (from..self.n_pkts).find(|&i| !bitmap::get(&self.got, i))
    }
    fn unanswered(&self) -> u64 {
        self.issued - self.answered.max(self.n_free).min(self.issued)
    }
}

#[derive(Debug)]
enum Rcv {
    Unknown,
    Active(Box<RecvFlow>),
    Done,
}

/// Per-host state.
#[derive(Debug, Default)]
struct HostState {
    /// The NIC holds or serializes a packet this transport handed it.
    nic_busy: bool,
    /// Flows this host sends (not yet acknowledged complete).
    sending: Vec<FlowId>,
    /// Flows this host receives (not yet complete).
    receiving: Vec<FlowId>,
    pacer: TimerSlot,
    /// When this host last issued a token (to any flow).
    last_token: Option<Time>,
    /// Until when the downlink is booked by data of tokens already issued (estimate).
    booked_until: Time,
    /// Until when the downlink is booked by announced free packets (estimate).
    free_until: Time,
}

/// What a destination can do for one flow at a token slot.
enum Next {
    /// Issue a token for this packet index.
    Pkt(u64),
    /// Nothing before this time.
    Wait(Time),
}

/// pHost for every host of a run.
pub struct Phost {
    p: PhostParams,
    hosts: Vec<HostState>,
    snd: Vec<Snd>,
    rcv: Vec<Rcv>,
    stats: Vec<FlowStats>,
}

impl Phost {
    pub fn from_config(cfg: &serde_json::Value, net: &NetInfo) -> Result<Phost, PhostConfigError> {
        let c: PhostConfig =
            if cfg.is_null() { PhostConfig::default() } else { crate::config::from_table(cfg, "transport")? };
        Ok(Phost::new(c.resolve(net)?, net.num_nodes))
    }

    pub fn new(p: PhostParams, num_nodes: usize) -> Phost {
        Phost {
            p,
            hosts: (0..num_nodes).map(|_| HostState::default()).collect(),
            snd: vec![],
            rcv: vec![],
            stats: vec![],
        }
    }

    pub fn params(&self) -> &PhostParams {
        &self.p
    }
    /// The first-BDP phase's parameters.
    pub fn free_tokens(&self) -> &FreeTokens {
        &self.p.free
    }
    /// Replace the first-BDP phase's parameters (e.g. an Aeolus wrapper setting `flags`).
    pub fn set_free_tokens(&mut self, f: FreeTokens) {
        self.p.free = f;
    }

    fn grow(&mut self, n: usize) {
        if self.snd.len() < n {
            self.snd.resize_with(n, || Snd::Unknown);
            self.rcv.resize_with(n, || Rcv::Unknown);
            self.stats.resize(n, FlowStats::default());
        }
    }

    fn n_pkts(&self, size: u64) -> u64 {
        size.div_ceil(self.p.mss)
    }

    fn payload_of(&self, size: u64, pkt: u64) -> u64 {
        let off = pkt * self.p.mss;
        (size - off).min(self.p.mss)
    }

    /// Hand a packet to the NIC of `host`.
    fn emit(&mut self, ctx: &mut Ctx, p: Packet) {
        self.hosts[ctx.host as usize].nic_busy = true;
        ctx.out.send(p);
    }

    fn ctrl(&self, kind: u8, flow: FlowId, src: NodeId, dst: NodeId) -> Packet {
        Packet { src, dst, flow, size: self.p.ctrl_size as u32, prio: self.p.ctrl_prio, kind, ..Packet::default() }
    }
}

impl Transport for Phost {
    fn name(&self) -> &'static str {
        "phost"
    }

    fn start_flow(&mut self, ctx: &mut Ctx, f: FlowId) {
        self.grow(ctx.flows.len().max(f as usize + 1));
        let info: &FlowInfo = &ctx.flows[f as usize];
        let (dst, size, start) = (info.dst, info.size.0, info.start);
        let t_src = info.host_rate.tx_time(Bytes(self.p.mtu));
        let now = ctx.now;
        let n = self.n_pkts(size);
        let n_free = self.p.free.count(n);
        let expiry = now + t_src * n_free + self.p.token_ttl;
        let prio = self.p.free.prio;
        let tokens = (0..n_free).map(|i| Tok { pkt: i, serial: i, expiry, prio, free: true }).collect::<Vec<_>>();
        let mut s = SendFlow {
            dst,
            size,
            start,
            remaining: size,
            tokens,
            sent: Vec::new(),
            last_heard: now,
            rts_timer: TimerSlot::default(),
            aeolus: self.p.aeolus.map(|c| AeolusSender::new(n_free as u32, &c)),
        };
        let at = now + self.p.rts_timeout;
        let g = s.rts_timer.arm(at);
        ctx.out.timer(at, token(f, TIMER_RTS, g));
        self.snd[f as usize] = Snd::Active(Box::new(s));
        self.hosts[ctx.host as usize].sending.push(f);
        self.send_rts(ctx, f, dst, size);
        self.try_send(ctx);
    }

    fn on_packet(&mut self, ctx: &mut Ctx, pkt: &Packet) {
        self.grow(ctx.flows.len().max(pkt.flow as usize + 1));
        match pkt.kind {
            KIND_RTS => self.on_rts(ctx, pkt),
            KIND_TOKEN => self.on_token(ctx, pkt),
            KIND_DATA => self.on_data(ctx, pkt),
            KIND_ACK => self.on_ack(ctx, pkt),
            KIND_PROBE => self.on_probe(ctx, pkt),
            _ => {}
        }
    }

    fn on_timer(&mut self, ctx: &mut Ctx, tok: u64) {
        let (id, kind, gen) = untoken(tok);
        match kind {
            TIMER_PACER => self.on_pacer(ctx, gen),
            TIMER_RTS => self.on_rts_timer(ctx, id, gen),
            _ => {}
        }
    }

    fn on_nic_idle(&mut self, ctx: &mut Ctx) {
        self.hosts[ctx.host as usize].nic_busy = false;
        self.try_send(ctx);
    }

    fn wants_nic_idle(&self) -> bool {
        true
    }

    fn flow_stats(&self, flow: FlowId) -> FlowStats {
        self.stats.get(flow as usize).copied().unwrap_or_default()
    }
}
