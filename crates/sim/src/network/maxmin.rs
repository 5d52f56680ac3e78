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

/// Index of a variable.
pub type VarId = u32;
/// Index of a constraint.
pub type ConsId = u32;

/// Relative tolerance of saturation tests.
const EPS: f64 = 1e-9;

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
}

#[derive(Debug, Clone)]
struct Var {
    penalty: f64,
    bound: f64,
    cons: Vec<(ConsId, f64)>,
    value: f64,
    mark: u64,
    fixed: bool,
    live: bool,
}

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
        let mut cons: Vec<(ConsId, f64)> = Vec::with_capacity(uses.len());
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
        let v = Var { penalty: penalty.max(f64::MIN_POSITIVE), bound, cons, value: 0.0, mark: 0, fixed: false, live: true };
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
        let uses = std::mem::take(&mut self.vars[id as usize].cons);
        for &(c, _) in &uses {
            let k = &mut self.cons[c as usize];
            if let Some(pos) = k.vars.iter().position(|(v, _)| *v == id) {
                k.vars.swap_remove(pos);
            }
            self.mark_dirty(c);
        }
        let v = &mut self.vars[id as usize];
        v.live = false;
        v.value = 0.0;
        self.free_vars.push(id);
    }

    /// The current value of a variable.
    pub fn value(&self, id: VarId) -> f64 {
        self.vars[id as usize].value
    }

    /// Re-solves the components touched since the last call; appends to `changed` every
    /// variable whose value may have changed.
    pub fn solve(&mut self, changed: &mut Vec<VarId>) {
        for id in std::mem::take(&mut self.dirty_free) {
            let v = &mut self.vars[id as usize];
            if v.live {
                v.value = v.bound;
                changed.push(id);
            }
        }
        let dirty = std::mem::take(&mut self.dirty);
        for c in dirty {
            self.cons[c as usize].dirty = false;
            if self.cons[c as usize].mark == self.epoch + 1 {
                continue; // already solved as part of an earlier component
            }
            self.solve_component(c, changed);
        }
        self.epoch += 1;
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
        // Initial remaining capacities and usages.
        for &v in &self.comp_vars {
            let var = &mut self.vars[v as usize];
            var.fixed = false;
            var.value = 0.0;
        }
        let mut active: Vec<ConsId> = Vec::with_capacity(self.comp_cons.len());
        for &c in &self.comp_cons {
            let usage = self.usage_of(c);
            let k = &mut self.cons[c as usize];
            k.rem = k.capacity;
            k.usage = usage;
            if usage > 0.0 {
                active.push(c);
            }
        }
        let mut candidates: Vec<VarId> = Vec::new();
        while !active.is_empty() {
            // The level at which the next constraint saturates.
            let mut level = f64::INFINITY;
            for &c in &active {
                let k = &self.cons[c as usize];
                level = level.min(k.rem / k.usage);
            }
            // Variables of the saturated constraints.
            candidates.clear();
            for &c in &active {
                let k = &self.cons[c as usize];
                if k.rem / k.usage <= level * (1.0 + EPS) {
                    for &(v, _) in &k.vars {
                        let var = &mut self.vars[v as usize];
                        if !var.fixed && var.mark == mark {
                            var.mark = mark + 1; // deduplicate
                            candidates.push(v);
                        }
                    }
                }
            }
            for &v in &candidates {
                self.vars[v as usize].mark = mark;
            }
            // Bounded variables that stop below the level go first.
            let mut min_bp = f64::INFINITY;
            for &v in &candidates {
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
                for &v in &candidates {
                    let b = self.vars[v as usize].bound;
                    self.fix(v, b);
                }
            } else {
                for &v in &candidates {
                    let x = level / self.vars[v as usize].penalty;
                    self.fix(v, x);
                }
            }
            // Drop constraints with nothing left to share.
            active.retain(|&c| {
                let k = &self.cons[c as usize];
                k.usage > 1e-12 && k.rem > EPS * k.capacity
            });
            if candidates.is_empty() {
                break;
            }
        }
        // Variables never fixed (their constraints all dropped out) take what they have.
        for &v in &self.comp_vars {
            let var = &mut self.vars[v as usize];
            if !var.fixed {
                var.fixed = true;
            }
            changed.push(v);
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
        let long = s.add_var(30e-6, f64::INFINITY, &[(ls[0], 1.05), (ls[1], 1.05), (ls[2], 1.05)]);
        let shorts: Vec<VarId> = ls.iter().map(|&l| s.add_var(10e-6, f64::INFINITY, &[(l, 1.05)])).collect();
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
        let long = s.add_var(1.0, f64::INFINITY, &ls.iter().map(|&l| (l, 1.0)).collect::<Vec<_>>());
        let shorts: Vec<VarId> = ls.iter().map(|&l| s.add_var(1.0, f64::INFINITY, &[(l, 1.0)])).collect();
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
}
