//! PASE's receiving end: an ACK per data packet (cumulative, the packet answered, ECN-Echo)
//! and an ACK per probe.

use super::*;

/// Receiver state of one flow.
#[derive(Debug)]
pub struct PaseReceiver {
    /// Packets held; its base is the first missing packet.
    got: SegSet,
    nseg: u64,
    pub done: bool,
}

impl PaseReceiver {
    pub(super) fn new(f: &FlowInfo, p: &PaseParams) -> PaseReceiver {
        PaseReceiver { got: SegSet::default(), nseg: f.size.0.div_ceil(p.mss).max(1), done: false }
    }
    fn cum_bytes(&self, f: &FlowInfo, p: &PaseParams) -> u64 {
        (self.got.base() * p.mss).min(f.size.0)
    }
    /// Data: acknowledge it (ECN-Echo if it was marked); true when the flow just completed.
    pub(super) fn on_data(&mut self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, pkt: &Packet) -> bool {
        let s = pkt.seq / p.mss;
        let mut completed = false;
        if s < self.nseg && self.got.insert(s) && self.got.base() >= self.nseg && !self.done {
            self.done = true;
            completed = true;
        }
        ctx.out.send(Packet {
            src: f.dst,
            dst: f.src,
            flow: f.id,
            size: p.ctrl_size as u32,
            kind: KIND_ACK,
            ack: self.cum_bytes(f, p),
            seq: pkt.seq,
            aux: pkt.seq + (pkt.payload as u64).max(1),
            aux2: if pkt.ecn == Ecn::Ce { ACK_ECE } else { 0 },
            ts: pkt.ts,
            ..Default::default()
        });
        completed
    }
    pub(super) fn on_probe(&self, ctx: &mut Ctx, f: &FlowInfo, p: &PaseParams, pkt: &Packet) {
        ctx.out.send(Packet {
            src: f.dst,
            dst: f.src,
            flow: f.id,
            size: p.ctrl_size as u32,
            kind: KIND_PROBE_ACK,
            ack: self.cum_bytes(f, p),
            seq: pkt.seq,
            ts: pkt.ts,
            ..Default::default()
        });
    }
}
