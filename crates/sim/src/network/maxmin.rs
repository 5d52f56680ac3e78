//! Weighted max-min fair sharing, solved incrementally.
//!
//! The system: variables `x_i >= 0` (flow rates), each with a penalty `p_i > 0` and an upper
//! bound `b_i` (possibly infinite); constraints `j` (links) with capacity `C_j`, either
//! *shared* (`sum_i a_ij x_i <= C_j`) or *fat pipe* (`max_i a_ij x_i <= C_j`). The solution
//! is the weighted max-min fair one: no `p_i x_i` can grow without making a smaller `p_k x_k`
//! shrink. This is the system SimGrid's CM02 network model solves (penalty = route latency,
//! `a_ij` = 1 on the route and a small cross-traffic weight on the reverse route).
//!
//! The algorithm is progressive filling: raise a common level `λ` (every unfixed variable at
//! `λ / p_i`) until a constraint saturates; fix the variables it carries (or, first, bounded
//! variables whose bound is reached below `λ`); repeat. Only the connected component of the
//! constraints touched since the last solve is re-solved: flows elsewhere keep their rates.

use super::keyed_heap::{KeyedHeap, TotalF64};

/// Index of a variable.
pub type VarId = u32;
/// Index of a constraint.
pub type ConsId = u32;

/// Relative tolerance of saturation tests.
const EPS: f64 = 1e-9;
/// A constraint with less than this fraction of its capacity left is saturated.
const SATURATED: f64 = 1e-9;
/// Levels this close (relatively) are equal when checking a local re-solve.
const LEVEL_TOLERANCE: f64 = 1e-9;

#[derive(Debug, Clone)]
struct Cons {
    capacity: f64,
    fatpipe: bool,
    /// Enabled variables on this constraint and their weights.
    vars: Vec<(VarId, f64)>,
    // Solver scratch.
    rem: f64,
    usage: f64,
    mark: u64,
    dirty: bool,
    /// Still filling: its level is in the heap (or it waits to be put back in).
    live: bool,
    /// Saturated in the last solution that covered it (shared constraints only).
    saturated: bool,
    /// Membership of the local solver's region (== `System::local_epoch`) or its
    /// boundary (== `local_epoch + 1`).
    local: u64,
}

/// One cache line each (the solver's loops touch many variables once).
#[derive(Debug, Clone)]
#[repr(align(64))]
struct Var {
    penalty: f64,
    bound: f64,
    cons: Vec<(ConsId, f64)>,
    value: f64,
    mark: u64,
    fixed: bool,
    live: bool,
    /// The constraint whose saturation fixed the value, `NO_CONS` when the bound did.
    fixed_by: ConsId,
}

const NO_CONS: ConsId = ConsId::MAX;

/// The sharing system.
#[derive(Debug, Default, Clone)]
pub struct System {
    cons: Vec<Cons>,
    vars: Vec<Var>,
    free_vars: Vec<VarId>,
    dirty: Vec<ConsId>,
    /// Variables with no constraint, changed since the last solve.
    dirty_free: Vec<VarId>,
    epoch: u64,
    // Scratch buffers reused across solves.
    comp_cons: Vec<ConsId>,
    comp_vars: Vec<VarId>,
    stack: Vec<ConsId>,
    /// The live constraints by the level at which they saturate (then by id).
    heap: KeyedHeap<TotalF64>,
    candidates: Vec<VarId>,
    saturated: Vec<ConsId>,
    stats: SolverStats,
    /// Re-solve around the change first (see [`System::solve`]); off: whole components.
    full_only: bool,
    local_epoch: u64,
    region: Vec<ConsId>,
    boundary: Vec<ConsId>,
}

/// Work done by the solver so far (for benchmarks and profiling).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct SolverStats {
    /// Components re-solved.
    pub components: u64,
    /// Sum of their variable counts.
    pub variables: u64,
    /// Sum of their constraint counts.
    pub constraints: u64,
    /// Solves settled by a local re-solve around the change.
    pub local: u64,
    /// Local re-solves abandoned for a whole-component solve.
    pub local_fallbacks: u64,
    /// Saturation rounds (levels) over all solves.
    pub rounds: u64,
    /// Heap entries popped over all solves.
    pub pops: u64,
}

impl System {
    /// An empty system.
    pub fn new() -> System {
        System::default()
    }

    /// Adds a constraint (a link); returns its id.
    pub fn add_constraint(&mut self, capacity: f64, fatpipe: bool) -> ConsId {
        self.cons.push(Cons {
            capacity,
            fatpipe,
            vars: Vec::new(),
            rem: 0.0,
            usage: 0.0,
            mark: 0,
            dirty: false,
            live: false,
            saturated: false,
            local: 0,
        });
        (self.cons.len() - 1) as ConsId
    }

    /// Number of constraints.
    pub fn constraints(&self) -> usize {
        self.cons.len()
    }

    fn mark_dirty(&mut self, c: ConsId) {
        let k = &mut self.cons[c as usize];
        if !k.dirty {
            k.dirty = true;
            self.dirty.push(c);
        }
    }

    /// Adds a variable with penalty `p > 0`, upper bound (`f64::INFINITY` for none) and
    /// constraint weights. A constraint listed twice gets the sum of the weights on a
    /// shared constraint and the largest on a fat pipe.
    pub fn add_var(&mut self, penalty: f64, bound: f64, uses: &[(ConsId, f64)]) -> VarId {
        // The list of the slot about to be reused keeps its capacity.
        let mut cons = match self.free_vars.last() {
            Some(&id) => std::mem::take(&mut self.vars[id as usize].cons),
            None => Vec::with_capacity(uses.len()),
        };
        cons.clear();
        for &(c, w) in uses {
            if w <= 0.0 {
                continue;
            }
            match cons.iter_mut().find(|(k, _)| *k == c) {
                Some(e) if self.cons[c as usize].fatpipe => e.1 = e.1.max(w),
                Some(e) => e.1 += w,
                None => cons.push((c, w)),
            }
        }
        let v = Var {
            penalty: penalty.max(f64::MIN_POSITIVE),
            bound,
            cons,
            value: 0.0,
            mark: 0,
            fixed: false,
            live: true,
            fixed_by: NO_CONS,
        };
        let id = match self.free_vars.pop() {
            Some(id) => {
                self.vars[id as usize] = v;
                id
            }
            None => {
                self.vars.push(v);
                (self.vars.len() - 1) as VarId
            }
        };
        let uses = std::mem::take(&mut self.vars[id as usize].cons);
        for &(c, w) in &uses {
            self.cons[c as usize].vars.push((id, w));
            self.mark_dirty(c);
        }
        if uses.is_empty() {
            self.dirty_free.push(id);
        }
        self.vars[id as usize].cons = uses;
        id
    }

    /// Removes a variable.
    pub fn remove_var(&mut self, id: VarId) {
        let mut uses = std::mem::take(&mut self.vars[id as usize].cons);
        for &(c, _) in &uses {
            let k = &mut self.cons[c as usize];
            if let Some(pos) = k.vars.iter().position(|(v, _)| *v == id) {
                k.vars.swap_remove(pos);
            }
            self.mark_dirty(c);
        }
        uses.clear();
        let v = &mut self.vars[id as usize];
        v.cons = uses;
        v.live = false;
        v.value = 0.0;
        self.free_vars.push(id);
    }

    /// Work done so far.
    pub fn stats(&self) -> SolverStats {
        self.stats
    }

    /// The current value of a variable.
    pub fn value(&self, id: VarId) -> f64 {
        self.vars[id as usize].value
    }

    /// Re-solves what the changes since the last call affect; appends to `changed` every
    /// variable whose value may have changed.
    ///
    /// First a *local* re-solve: the variables on the touched constraints are re-filled with
    /// every other variable held at its value, and the result is accepted only when each
    /// held variable keeps a bottleneck (see [`System::solve_local`]); otherwise the region
    /// grows and, past a size, the whole connected components are re-solved. Either way the
    /// result is the max-min fair solution (it is unique).
    pub fn solve(&mut self, changed: &mut Vec<VarId>) {
        for id in std::mem::take(&mut self.dirty_free) {
            let v = &mut self.vars[id as usize];
            if v.live {
                v.value = v.bound;
                changed.push(id);
            }
        }
        let dirty = std::mem::take(&mut self.dirty);
        for &c in &dirty {
            self.cons[c as usize].dirty = false;
        }
        if !dirty.is_empty() && !self.full_only {
            if self.solve_local(&dirty, changed) {
                self.stats.local += 1;
                self.epoch += 1;
                self.dirty = dirty;
                self.dirty.clear();
                return;
            }
            self.stats.local_fallbacks += 1;
            // Fresh marks: the attempt's marks must not read as "already solved".
            self.epoch += 1;
        }
        for &c in &dirty {
            if self.cons[c as usize].mark == self.epoch + 1 {
                continue; // already solved as part of an earlier component
            }
            self.solve_component(c, changed);
        }
        self.epoch += 1;
        self.dirty = dirty;
        self.dirty.clear();
    }

    /// Solves whole connected components only (for checking the local solver).
    pub fn set_full_only(&mut self, full_only: bool) {
        self.full_only = full_only;
    }

    fn solve_component(&mut self, start: ConsId, changed: &mut Vec<VarId>) {
        let mark = self.epoch + 1;
        // Collect the component.
        self.comp_cons.clear();
        self.comp_vars.clear();
        self.stack.clear();
        self.stack.push(start);
        self.cons[start as usize].mark = mark;
        while let Some(c) = self.stack.pop() {
            self.comp_cons.push(c);
            for i in 0..self.cons[c as usize].vars.len() {
                let v = self.cons[c as usize].vars[i].0;
                if self.vars[v as usize].mark == mark {
                    continue;
                }
                self.vars[v as usize].mark = mark;
                self.comp_vars.push(v);
                for j in 0..self.vars[v as usize].cons.len() {
                    let c2 = self.vars[v as usize].cons[j].0;
                    if self.cons[c2 as usize].mark != mark {
                        self.cons[c2 as usize].mark = mark;
                        self.stack.push(c2);
                    }
                }
            }
        }
        self.fill(mark);
        self.record_saturation();
        changed.extend_from_slice(&self.comp_vars);
    }

    /// Local re-solve around the constraints `dirty`; `false` when it gave up (nothing is
    /// final then: the caller re-solves the components).
    ///
    /// Region `R`: constraints whose variables are all re-filled; boundary `B`: the other
    /// constraints those variables use, whose remaining variables ("held") keep their values
    /// and capacity. Max-min fairness holds globally iff every variable has a bottleneck: its
    /// bound, or a saturated constraint on which no variable has a larger level `p x`.
    /// Re-filled variables get one inside `R ∪ B` by construction; held variables had one
    /// before. A boundary constraint `j` is added to `R` (and the fill redone) when:
    /// * `j` was saturated and no longer is (a held variable may have been bottlenecked
    ///   there and could now grow);
    /// * a re-filled variable was fixed by `j` below the largest held level on `j` (that
    ///   held variable should give way);
    /// * `j` was saturated and a re-filled variable now exceeds every held level on `j` (a
    ///   held variable bottlenecked at `j` lost its bottleneck);
    /// * `j` is a fat pipe with held variables (a saturating fat pipe fixes all of its
    ///   variables at one level, as in SimGrid).
    fn solve_local(&mut self, dirty: &[ConsId], changed: &mut Vec<VarId>) -> bool {
        /// Give up past this many re-filled variables or rounds of growth.
        const MAX_VARS: usize = 2048;
        const MAX_ROUNDS: usize = 8;
        // A touched constraint carrying too many variables (a shared backbone) makes the
        // region too large from the start: no need to collect them to find out.
        if dirty
            .iter()
            .any(|&c| self.cons[c as usize].vars.len() > MAX_VARS)
        {
            return false;
        }
        self.region.clear();
        self.local_epoch += 2;
        let in_region = self.local_epoch;
        for &c in dirty {
            if self.cons[c as usize].local != in_region {
                self.cons[c as usize].local = in_region;
                self.region.push(c);
            }
        }
        for _ in 0..MAX_ROUNDS {
            // A fresh mark for this attempt's re-filled variables and constraints.
            self.epoch += 1;
            let mark = self.epoch + 1;
            let in_boundary = in_region + 1;
            self.comp_vars.clear();
            self.comp_cons.clear();
            self.boundary.clear();
            for i in 0..self.region.len() {
                let c = self.region[i];
                self.comp_cons.push(c);
                self.cons[c as usize].mark = mark;
                for k in 0..self.cons[c as usize].vars.len() {
                    let v = self.cons[c as usize].vars[k].0;
                    if self.vars[v as usize].mark != mark {
                        self.vars[v as usize].mark = mark;
                        self.comp_vars.push(v);
                    }
                }
                // Too large: give up before collecting the rest (a shared backbone carries
                // every flow).
                if self.comp_vars.len() > MAX_VARS {
                    return false;
                }
            }
            for i in 0..self.comp_vars.len() {
                let v = self.comp_vars[i];
                for k in 0..self.vars[v as usize].cons.len() {
                    let c = self.vars[v as usize].cons[k].0;
                    let kc = &mut self.cons[c as usize];
                    if kc.local != in_region && kc.local != in_boundary {
                        kc.local = in_boundary;
                        kc.mark = mark;
                        self.boundary.push(c);
                        self.comp_cons.push(c);
                    }
                }
            }
            self.fill(mark);
            // Check the boundary.
            let mut grew = false;
            for i in 0..self.boundary.len() {
                let j = self.boundary[i];
                if self.boundary_breaks(j, mark) {
                    self.cons[j as usize].local = in_region;
                    self.region.push(j);
                    grew = true;
                }
            }
            if !grew {
                self.record_saturation();
                changed.extend_from_slice(&self.comp_vars);
                return true;
            }
            // Boundary constraints not taken into the region go back to being outside.
            for i in 0..self.boundary.len() {
                let j = self.boundary[i];
                if self.cons[j as usize].local == in_boundary {
                    self.cons[j as usize].local = 0;
                }
            }
        }
        false
    }

    /// Whether boundary constraint `j` invalidates the local solution (see
    /// [`System::solve_local`]); re-filled variables carry `mark`.
    fn boundary_breaks(&self, j: ConsId, mark: u64) -> bool {
        let k = &self.cons[j as usize];
        let mut held_max = f64::NEG_INFINITY;
        let mut refilled_max = f64::NEG_INFINITY;
        let mut fixed_here_min = f64::INFINITY;
        for &(v, _) in &k.vars {
            let var = &self.vars[v as usize];
            let level = var.penalty * var.value;
            if var.mark == mark {
                refilled_max = refilled_max.max(level);
                if var.fixed_by == j {
                    fixed_here_min = fixed_here_min.min(level);
                }
            } else {
                held_max = held_max.max(level);
            }
        }
        if held_max == f64::NEG_INFINITY {
            return false; // only re-filled variables: settled by the fill
        }
        if k.fatpipe {
            // A saturating fat pipe fixes all its variables at one level (SimGrid's rule),
            // which couples them in ways the checks below do not follow.
            return true;
        }
        let saturated_now = k.rem <= SATURATED * k.capacity;
        let tol = LEVEL_TOLERANCE;
        if k.saturated && !saturated_now {
            return true;
        }
        if saturated_now && fixed_here_min < held_max * (1.0 - tol) {
            return true;
        }
        k.saturated && refilled_max > held_max * (1.0 + tol)
    }

    /// Stores, for the constraints just solved, whether they are saturated.
    fn record_saturation(&mut self) {
        for i in 0..self.comp_cons.len() {
            let k = &mut self.cons[self.comp_cons[i] as usize];
            k.saturated = !k.fatpipe && !k.vars.is_empty() && k.rem <= SATURATED * k.capacity;
        }
    }

    /// Progressive filling of the variables in `comp_vars` (all carrying `mark`) over the
    /// constraints in `comp_cons`; other variables on those constraints keep their values
    /// and the capacity they use.
    ///
    /// Round by round: the constraints that saturate at the lowest level (ties within
    /// [`EPS`]) fix their unfixed variables at that level over their penalty, unless some
    /// of those variables' bounds stop them lower (they are fixed at their bounds first,
    /// and the constraints stay); the constraints those variables cross get their new
    /// levels.
    fn fill(&mut self, mark: u64) {
        self.stats.components += 1;
        self.stats.variables += self.comp_vars.len() as u64;
        self.stats.constraints += self.comp_cons.len() as u64;
        self.start_fill();
        let mut candidates = std::mem::take(&mut self.candidates);
        let mut saturated = std::mem::take(&mut self.saturated);
        let mut unfixed = self.comp_vars.len();
        // Each round: the constraints that saturate at the lowest level, ties within EPS.
        let ties = |TotalF64(level): TotalF64, TotalF64(next): TotalF64| {
            // Not above (NaN included), as the loop of pops this replaced tested.
            next.partial_cmp(&(level * (1.0 + EPS))) != Some(std::cmp::Ordering::Greater)
        };
        while let Some(TotalF64(level)) = self.heap.pop_group(ties, &mut saturated) {
            self.stats.pops += saturated.len() as u64;
            self.stats.rounds += 1;
            self.unfixed_of(&saturated, mark, &mut candidates);
            let bounded = self.fix_round(level, &saturated, &mut candidates);
            unfixed -= candidates.len();
            if unfixed == 0 {
                // Every variable has its value: the constraints left would only leave the
                // heap one by one, fixing nothing (their `live` flags are reset by the next
                // fill that covers them).
                self.heap.clear();
                break;
            }
            self.requeue(&candidates, &saturated, bounded);
        }
        // Variables never fixed (their constraints all dropped out) take what they have.
        for &v in &self.comp_vars {
            self.vars[v as usize].fixed = true;
        }
        self.candidates = candidates;
        self.saturated = saturated;
    }

    /// Unfixes the component's variables and queues its constraints by the level at which
    /// they saturate.
    fn start_fill(&mut self) {
        for &v in &self.comp_vars {
            let var = &mut self.vars[v as usize];
            var.fixed = false;
            var.value = 0.0;
            var.fixed_by = NO_CONS;
        }
        self.heap.clear();
        for i in 0..self.comp_cons.len() {
            let c = self.comp_cons[i];
            let (usage, held) = self.usage_and_held(c);
            let k = &mut self.cons[c as usize];
            k.rem = if k.fatpipe {
                k.capacity
            } else {
                (k.capacity - held).max(0.0)
            };
            k.usage = usage;
            k.live = usage > 0.0;
            if k.live {
                // Ordered once, by one linear pass, at the first pop.
                self.heap.set_unordered(c, TotalF64(k.rem / k.usage));
            }
        }
    }

    /// Into `candidates`: the unfixed variables of the component (carrying `mark`) on the
    /// `saturated` constraints, once each, each remembering the first one it was found on.
    fn unfixed_of(&mut self, saturated: &[ConsId], mark: u64, candidates: &mut Vec<VarId>) {
        candidates.clear();
        for &c in saturated {
            for &(v, _) in &self.cons[c as usize].vars {
                let var = &mut self.vars[v as usize];
                if !var.fixed && var.mark == mark {
                    var.mark = mark + 1; // deduplicate
                    var.fixed_by = c;
                    candidates.push(v);
                }
            }
        }
        for &v in candidates.iter() {
            self.vars[v as usize].mark = mark;
        }
    }

    /// Fixes this round's variables: those bounded below `level` at their bounds (only
    /// the lowest ones: `candidates` keeps them alone), else all of them at the level; the
    /// `saturated` constraints are then done. True when the bounds decided.
    fn fix_round(&mut self, level: f64, saturated: &[ConsId], candidates: &mut Vec<VarId>) -> bool {
        let mut min_bp = f64::INFINITY;
        for &v in candidates.iter() {
            let var = &self.vars[v as usize];
            let bp = var.bound * var.penalty;
            if bp < level && bp < min_bp {
                min_bp = bp;
            }
        }
        if min_bp.is_finite() {
            let lim = min_bp * (1.0 + 1e-5);
            candidates.retain(|&v| {
                let var = &self.vars[v as usize];
                var.bound * var.penalty <= lim
            });
            for &v in candidates.iter() {
                let b = self.vars[v as usize].bound;
                self.vars[v as usize].fixed_by = NO_CONS;
                self.fix(v, b);
            }
            true
        } else {
            for &v in candidates.iter() {
                let x = level / self.vars[v as usize].penalty;
                self.fix(v, x);
            }
            for &c in saturated {
                self.cons[c as usize].live = false;
            }
            false
        }
    }

    /// Queues the new levels of the constraints crossed by the variables just fixed, and,
    /// when bounds decided the round, the `saturated` constraints left with capacity.
    fn requeue(&mut self, candidates: &[VarId], saturated: &[ConsId], bounded: bool) {
        for &v in candidates {
            for j in 0..self.vars[v as usize].cons.len() {
                let c = self.vars[v as usize].cons[j].0;
                let k = &mut self.cons[c as usize];
                if !k.live {
                    continue;
                }
                if k.usage > 1e-12 && k.rem > EPS * k.capacity {
                    self.heap.set(c, TotalF64(k.rem / k.usage));
                } else {
                    k.live = false;
                    self.heap.remove(c);
                }
            }
        }
        if bounded {
            for &c in saturated {
                let k = &mut self.cons[c as usize];
                if k.live && k.usage > 1e-12 && k.rem > EPS * k.capacity {
                    self.heap.set(c, TotalF64(k.rem / k.usage));
                }
            }
        }
        if candidates.is_empty() {
            // Nothing could be fixed (cannot happen with positive usages); avoid spinning.
            for &c in saturated {
                self.cons[c as usize].live = false;
            }
        }
    }

    fn usage_of(&self, c: ConsId) -> f64 {
        let k = &self.cons[c as usize];
        let mut u = 0.0f64;
        for &(v, w) in &k.vars {
            let var = &self.vars[v as usize];
            if var.fixed {
                continue;
            }
            let x = w / var.penalty;
            if k.fatpipe {
                u = u.max(x);
            } else {
                u += x;
            }
        }
        u
    }

    /// The usage of `c`'s unfixed variables (as [`System::usage_of`]) and the capacity its
    /// fixed (held) variables take.
    fn usage_and_held(&self, c: ConsId) -> (f64, f64) {
        let k = &self.cons[c as usize];
        let mut u = 0.0f64;
        let mut held = 0.0f64;
        for &(v, w) in &k.vars {
            let var = &self.vars[v as usize];
            if var.fixed {
                held += w * var.value;
                continue;
            }
            let x = w / var.penalty;
            if k.fatpipe {
                u = u.max(x);
            } else {
                u += x;
            }
        }
        (u, held)
    }

    fn fix(&mut self, v: VarId, x: f64) {
        self.vars[v as usize].fixed = true;
        self.vars[v as usize].value = x;
        let p = self.vars[v as usize].penalty;
        for j in 0..self.vars[v as usize].cons.len() {
            let (c, w) = self.vars[v as usize].cons[j];
            if self.cons[c as usize].fatpipe {
                let u = self.usage_of(c);
                self.cons[c as usize].usage = u;
            } else {
                let k = &mut self.cons[c as usize];
                k.rem -= w * x;
                k.usage -= w / p;
                if k.usage < 0.0 {
                    k.usage = 0.0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn solve(s: &mut System) {
        let mut ch = Vec::new();
        s.solve(&mut ch);
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn one_flow_gets_the_link() {
        let mut s = System::new();
        let l = s.add_constraint(1e9, false);
        let v = s.add_var(1.0, f64::INFINITY, &[(l, 1.0)]);
        solve(&mut s);
        assert!(close(s.value(v), 1e9));
    }

    #[test]
    fn two_flows_get_half_each() {
        let mut s = System::new();
        let l = s.add_constraint(1e9, false);
        let a = s.add_var(1e-5, f64::INFINITY, &[(l, 1.0)]);
        let b = s.add_var(1e-5, f64::INFINITY, &[(l, 1.0)]);
        solve(&mut s);
        assert!(close(s.value(a), 5e8) && close(s.value(b), 5e8));
        s.remove_var(b);
        solve(&mut s);
        assert!(close(s.value(a), 1e9));
    }

    #[test]
    fn penalties_weight_the_shares() {
        // A flow with twice the latency (penalty) gets half the share of the other.
        let mut s = System::new();
        let l = s.add_constraint(3e9, false);
        let a = s.add_var(2.0, f64::INFINITY, &[(l, 1.0)]);
        let b = s.add_var(1.0, f64::INFINITY, &[(l, 1.0)]);
        solve(&mut s);
        assert!(close(s.value(a), 1e9) && close(s.value(b), 2e9));
    }

    #[test]
    fn parking_lot_is_latency_weighted() {
        // SimGrid note 2.4: long flow over L1 L2 L3 (penalty 30us), one short flow per link
        // (penalty 10us), weight 1.05 (cross traffic on SHARED links): per link
        // usage = 1.05/30e-6 + 1.05/10e-6, long rate = level/30e-6.
        let mut s = System::new();
        let ls: Vec<ConsId> = (0..3).map(|_| s.add_constraint(1e9, false)).collect();
        let long = s.add_var(
            30e-6,
            f64::INFINITY,
            &[(ls[0], 1.05), (ls[1], 1.05), (ls[2], 1.05)],
        );
        let shorts: Vec<VarId> = ls
            .iter()
            .map(|&l| s.add_var(10e-6, f64::INFINITY, &[(l, 1.05)]))
            .collect();
        solve(&mut s);
        let level = 1e9 / (1.05 / 30e-6 + 1.05 / 10e-6);
        assert!(close(s.value(long), level / 30e-6), "{}", s.value(long));
        for v in shorts {
            assert!(close(s.value(v), level / 10e-6));
        }
        // 238.1 MB/s and 714.3 MB/s as measured in SimGrid.
        assert!((s.value(long) - 238.1e6).abs() < 0.1e6);
    }

    #[test]
    fn parking_lot_plain_max_min() {
        // With equal penalties: the long flow gets 1/2 of each link.
        let mut s = System::new();
        let ls: Vec<ConsId> = (0..3).map(|_| s.add_constraint(1e9, false)).collect();
        let long = s.add_var(
            1.0,
            f64::INFINITY,
            &ls.iter().map(|&l| (l, 1.0)).collect::<Vec<_>>(),
        );
        let shorts: Vec<VarId> = ls
            .iter()
            .map(|&l| s.add_var(1.0, f64::INFINITY, &[(l, 1.0)]))
            .collect();
        solve(&mut s);
        assert!(close(s.value(long), 5e8));
        assert!(shorts.iter().all(|&v| close(s.value(v), 5e8)));
    }

    #[test]
    fn bounds_release_capacity() {
        let mut s = System::new();
        let l = s.add_constraint(1e9, false);
        let a = s.add_var(1.0, 1e8, &[(l, 1.0)]);
        let b = s.add_var(1.0, f64::INFINITY, &[(l, 1.0)]);
        solve(&mut s);
        assert!(close(s.value(a), 1e8) && close(s.value(b), 9e8));
    }

    #[test]
    fn fat_pipes_do_not_share() {
        let mut s = System::new();
        let l = s.add_constraint(1e9, true);
        let a = s.add_var(1.0, f64::INFINITY, &[(l, 1.0)]);
        let b = s.add_var(1.0, f64::INFINITY, &[(l, 1.0), (l, 0.05)]);
        solve(&mut s);
        assert!(close(s.value(a), 1e9) && close(s.value(b), 1e9));
    }

    #[test]
    fn only_touched_components_change() {
        let mut s = System::new();
        let l1 = s.add_constraint(1e9, false);
        let l2 = s.add_constraint(1e9, false);
        let a = s.add_var(1.0, f64::INFINITY, &[(l1, 1.0)]);
        let _b = s.add_var(1.0, f64::INFINITY, &[(l2, 1.0)]);
        let mut ch = Vec::new();
        s.solve(&mut ch);
        ch.clear();
        let c = s.add_var(1.0, f64::INFINITY, &[(l1, 1.0)]);
        s.solve(&mut ch);
        ch.sort();
        assert_eq!(ch, vec![a, c]);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]
        /// No constraint over capacity; every variable is bottlenecked (by its bound or by a
        /// saturated constraint on which no variable has a larger `p x`).
        #[test]
        fn max_min_properties(
            caps in prop::collection::vec(1.0f64..100.0, 1..6),
            flows in prop::collection::vec((prop::collection::vec((0usize..6, prop_oneof![Just(1.0f64), 0.05f64..1.0]), 1..4), 0.1f64..10.0, prop_oneof![Just(f64::INFINITY), 0.5f64..50.0]), 1..8),
            fat in prop::collection::vec(any::<bool>(), 6),
        ) {
            let mut s = System::new();
            let cs: Vec<ConsId> = caps.iter().enumerate().map(|(i, &c)| s.add_constraint(c, fat[i])).collect();
            let mut vs = Vec::new();
            for (uses, p, b) in &flows {
                let u: Vec<(ConsId, f64)> = uses.iter().map(|&(c, w)| (cs[c % cs.len()], w)).collect();
                vs.push((s.add_var(*p, *b, &u), u, *p, *b));
            }
            solve(&mut s);
            // Capacity respected.
            for (j, &c) in cs.iter().enumerate() {
                let mut used = 0.0f64;
                for (v, u, _, _) in &vs {
                    let mut w_sum = 0.0f64;
                    for &(k, w) in u { if k == c { if fat[j] { w_sum = w_sum.max(w) } else { w_sum += w } } }
                    if fat[j] { used = used.max(w_sum * s.value(*v)) } else { used += w_sum * s.value(*v) }
                }
                prop_assert!(used <= caps[j] * (1.0 + 1e-6), "constraint {j} used {used} > {}", caps[j]);
            }
            // Bottlenecked.
            for (v, u, p, b) in &vs {
                let x = s.value(*v);
                prop_assert!(x > 0.0);
                if x >= b * (1.0 - 1e-6) { continue; }
                let mut ok = false;
                for &(c, _) in u {
                    let j = cs.iter().position(|&k| k == c).unwrap();
                    let mut used = 0.0f64;
                    let mut max_px = 0.0f64;
                    for (v2, u2, p2, _) in &vs {
                        let mut w_sum = 0.0f64;
                        for &(k, w) in u2 { if k == c { if fat[j] { w_sum = w_sum.max(w) } else { w_sum += w } } }
                        if w_sum > 0.0 {
                            if fat[j] { used = used.max(w_sum * s.value(*v2)) } else { used += w_sum * s.value(*v2) }
                            max_px = max_px.max(p2 * s.value(*v2));
                        }
                    }
                    if used >= caps[j] * (1.0 - 1e-6) && p * x >= max_px * (1.0 - 1e-6) {
                        ok = true;
                    }
                }
                prop_assert!(ok, "variable {v} (x = {x}) is not bottlenecked");
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        /// The local re-solve gives the whole-component solution after any sequence of
        /// additions and removals.
        #[test]
        fn local_matches_full(
            caps in prop::collection::vec(prop_oneof![Just(1.0f64), Just(10.0f64), 1.0f64..100.0], 2..10),
            fat in prop::collection::vec(any::<bool>(), 10),
            ops in prop::collection::vec((any::<bool>(), prop::collection::vec((0usize..10, prop_oneof![Just(1.0f64), Just(0.05f64), 0.05f64..1.0]), 1..4), prop_oneof![Just(1.0f64), 0.1f64..10.0], prop_oneof![4 => Just(f64::INFINITY), 1 => 0.5f64..50.0], any::<prop::sample::Index>()), 1..40),
        ) {
            let mut local = System::new();
            let mut full = System::new();
            full.set_full_only(true);
            let cs: Vec<ConsId> = caps.iter().enumerate().map(|(i, &c)| {
                full.add_constraint(c, fat[i] && i % 3 == 0);
                local.add_constraint(c, fat[i] && i % 3 == 0)
            }).collect();
            let mut live: Vec<(VarId, VarId)> = Vec::new();
            for (add, uses, p, b, pick) in &ops {
                if *add || live.is_empty() {
                    let u: Vec<(ConsId, f64)> = uses.iter().map(|&(c, w)| (cs[c % cs.len()], w)).collect();
                    live.push((local.add_var(*p, *b, &u), full.add_var(*p, *b, &u)));
                } else {
                    let (a, f) = live.swap_remove(pick.index(live.len()));
                    local.remove_var(a);
                    full.remove_var(f);
                }
                solve(&mut local);
                solve(&mut full);
                for &(a, f) in &live {
                    let (x, y) = (local.value(a), full.value(f));
                    prop_assert!((x - y).abs() <= 1e-7 * y.abs().max(1e-9), "local {x} full {y}");
                }
            }
        }
    }
}
