//! The programs' per-network policy verdict counters (`struct nvo_pol_counters` in
//! bpf/policy_maps.h, the `pol_counters` map), field for field the pipeline's
//! [`PolicyCounters`] but the rules' own (`pol_rule_hits`) and nvod's own counts.
//!
//! One list of field names generates the struct, its per-CPU sum and its conversion, so the
//! three cannot drift apart; what keeps the rest in step:
//!
//! ```text
//!  a field added to            fails
//!  PolicyCounters (pipeline)   to compile: to_pipeline's literal names every field (add it
//!                              to the list below, or set it among nvod's own)
//!  the list below              to compile (no such PolicyCounters field), and the test
//!                              against bpf/policy_maps.h
//!  struct nvo_pol_counters     the test against bpf/policy_maps.h, and layout.rs's size check
//! ```

use nvo_pipeline::policy::PolicyCounters;

macro_rules! pol_counters {
    ($($field:ident),+ $(,)?) => {
        /// One network's policy verdicts on one CPU (`struct nvo_pol_counters`).
        #[repr(C)]
        #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
        pub struct PolCounters {
            $(
                #[allow(missing_docs)]
                pub $field: u64,
            )+
        }

        impl PolCounters {
            /// The fields in the order bpf/policy_maps.h lays them out.
            pub const FIELDS: &'static [&'static str] = &[$(stringify!($field)),+];

            /// Adds one CPU's counts.
            pub fn add(&mut self, o: &PolCounters) {
                $(self.$field = self.$field.wrapping_add(o.$field);)+
            }

            /// As the pipeline counts them, to be added to nvod's (`PolicyCounters::merge`).
            pub fn to_pipeline(&self) -> PolicyCounters {
                PolicyCounters {
                    $($field: self.$field,)+
                    // Not in this map: the rules' counts are pol_rule_hits', and nvod alone
                    // asks the kernel's connection table.
                    rules: Vec::new(),
                    kernel_lookups: 0,
                    kernel_lookups_skipped: 0,
                    in_kernel: true,
                }
            }
        }
    };
}

pol_counters!(
    allowed,
    denied,
    default_allowed,
    default_denied,
    tracked,
    sender_applied,
    unknown_destination,
    exempt,
    conntrack_full,
);

#[cfg(test)]
mod tests {
    use super::*;

    /// The C struct's `__u64` fields, in order.
    fn c_fields() -> Vec<String> {
        let header = include_str!("../bpf/policy_maps.h");
        let body = header
            .split("struct nvo_pol_counters {")
            .nth(1)
            .and_then(|rest| rest.split("};").next())
            .expect("struct nvo_pol_counters in bpf/policy_maps.h");
        body.lines()
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with("/*"))
            .map(|l| {
                let name = l.strip_prefix("__u64 ").and_then(|l| l.strip_suffix(';'));
                name.unwrap_or_else(|| panic!("not a __u64 field: {l:?}"))
                    .to_owned()
            })
            .collect()
    }

    #[test]
    fn the_c_struct_has_the_same_fields_in_the_same_order() {
        assert_eq!(c_fields(), PolCounters::FIELDS);
    }
}
