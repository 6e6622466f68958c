//! NDP's receiving end: per-flow state (what arrived, what is owed a PULL) and each receiving
//! host's PULL queue and pacer (NDP §3).

use super::*;

/// The receiving end of one NDP flow.
#[derive(Debug)]
pub struct NdpReceiver {
    pub(super) src: NodeId,
    size: u64,
    npk: u64,
    /// Bitset of packets held (freed on completion).
    got: Vec<u64>,
    /// Per packet: PULLs returned for its copies, and the highest token count a copy
    /// carried (`aux`), saturating; see "Pull-loop tokens". Freed on completion.
    returned: Vec<u8>,
    stamp: Vec<u8>,
    count: u64,
    /// First packet not held (in-order prefix).
    cum: u64,
    pub(super) complete: bool,
    /// Pull number of the last PULL sent.
    pub(super) pulls: u64,
    /// PULLs waiting in the host's pull queue.
    pub(super) pending: u32,
    /// Aeolus' first-RTT state (with `aeolus`).
    pub(super) aeolus: Option<AeolusReceiver>,
    /// Packets the sender sends unscheduled (its first window), known from the flow size.
    pub(super) n_unsched: u64,
}

impl NdpReceiver {
    pub fn new(flow: &FlowInfo, p: &NdpParams) -> NdpReceiver {
        let npk = p.packets(flow.size.0);
        NdpReceiver {
            src: flow.src,
            size: flow.size.0,
            npk,
            got: vec![0; npk.div_ceil(64) as usize],
            returned: vec![0; npk as usize],
            stamp: vec![0; npk as usize],
            count: 0,
            cum: 0,
            complete: false,
            pulls: 0,
            pending: 0,
            aeolus: p.aeolus.map(|_| AeolusReceiver::new()),
            n_unsched: p.first_window(flow).min(npk),
        }
    }
    /// The Aeolus receiver state (with `aeolus`).
    pub fn aeolus(&self) -> Option<&AeolusReceiver> {
        self.aeolus.as_ref()
    }
    pub fn has(&self, idx: u64) -> bool {
        self.complete || (idx < self.npk && self.got[(idx / 64) as usize] & (1 << (idx % 64)) != 0)
    }
    /// Record packet `idx`; true if it is new.
    pub(super) fn record(&mut self, idx: u64) -> bool {
        if idx >= self.npk || self.has(idx) {
            return false;
        }
        self.got[(idx / 64) as usize] |= 1 << (idx % 64);
        self.count += 1;
        while self.cum < self.npk && self.has(self.cum) {
            self.cum += 1;
        }
        if self.count == self.npk {
            self.complete = true;
            self.got = Vec::new();
            self.returned = Vec::new();
            self.stamp = Vec::new();
        }
        true
    }
    /// Whether the arrival of a copy of packet `idx` carrying token count `tokens` (the
    /// token-taking transmissions of the packet up to this copy) returns a PULL: while the
    /// PULLs returned for the packet are fewer than the highest count seen, yes. Each
    /// token-taking transmission gets one PULL back, whichever copies arrive and in what
    /// order; a timeout resend (which takes no token) stands in for a lost one.
    pub(super) fn pulls_for(&mut self, idx: u64, tokens: u64) -> bool {
        let i = idx as usize;
        if i >= self.returned.len() {
            return false;
        }
        // A copy always carries at least its own token or its original's.
        let k = tokens.clamp(1, u8::MAX as u64) as u8;
        self.stamp[i] = self.stamp[i].max(k);
        if self.returned[i] < self.stamp[i] {
            self.returned[i] += 1;
            return true;
        }
        false
    }
    /// Bytes held in order from byte 0.
    pub fn cum_bytes(&self, mss: u64) -> u64 {
        (self.cum * mss).min(self.size)
    }
    pub fn is_complete(&self) -> bool {
        self.complete
    }
    /// PULLs waiting in the host's pull queue.
    pub fn pending_pulls(&self) -> u32 {
        self.pending
    }
    /// PULLs sent so far (the last pull number).
    pub fn pulls_sent(&self) -> u64 {
        self.pulls
    }
}

/// One receiving host's pull queue and pacer.
#[derive(Debug, Default)]
pub struct PullQueue {
    /// Flows with pending PULLs, served round robin (stale entries of completed flows are
    /// skipped).
    pub(super) ring: VecDeque<FlowId>,
    /// Earliest time the next PULL may leave.
    pub(super) next_at: Time,
    pub(super) timer: TimerSlot,
    pub(super) released: u64,
}

impl PullQueue {
    /// PULLs this host has sent.
    pub fn released(&self) -> u64 {
        self.released
    }
}
