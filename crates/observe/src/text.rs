//! The Prometheus text exposition format, version 0.0.4
//! (<https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format>):
//!
//! ```text
//! # HELP nvo_drops_total Frames dropped, by reason.
//! # TYPE nvo_drops_total counter
//! nvo_drops_total{reason="unknown_vni"} 3
//! ```
//!
//! The writer's contract: every family has one HELP and one TYPE line, written before its
//! first sample, and all its samples follow them (a family cannot be opened twice, so two
//! TYPE lines for one name are impossible); metric and label names are checked against the
//! format's grammar; label values escape `\`, `"` and newline, HELP text `\` and newline, as
//! the format requires. A family with no sample writes nothing.

use std::collections::BTreeSet;
use std::fmt::Write as _;

/// The `Content-Type` of an exposition in this format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// A family's type (the TYPE line). The format's `summary`, `histogram` and `untyped` are not
/// needed by nvod.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Only goes up (or restarts from zero); its name ends in `_total`.
    Counter,
    /// Goes up and down.
    Gauge,
}

impl Kind {
    fn word(self) -> &'static str {
        match self {
            Kind::Counter => "counter",
            Kind::Gauge => "gauge",
        }
    }
}

/// Why a family or a sample was refused (a bug in the caller, never input from outside).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TextError {
    /// A metric name outside `[a-zA-Z_:][a-zA-Z0-9_:]*`.
    #[error("metric name {0:?} is not [a-zA-Z_:][a-zA-Z0-9_:]*")]
    MetricName(String),
    /// A label name outside `[a-zA-Z_][a-zA-Z0-9_]*`, or starting with the reserved `__`.
    #[error("label name {0:?} is not [a-zA-Z_][a-zA-Z0-9_]* or starts with __")]
    LabelName(String),
    /// A counter whose name does not end in `_total` (Prometheus' convention).
    #[error("counter {0:?} does not end in _total")]
    CounterName(String),
    /// A family opened a second time.
    #[error("metric family {0:?} is written twice")]
    Duplicate(String),
}

/// An exposition being written.
#[derive(Debug, Default)]
pub struct Exposition {
    out: String,
    names: BTreeSet<String>,
}

impl Exposition {
    /// An empty exposition.
    pub fn new() -> Exposition {
        Exposition::default()
    }

    /// Opens the family `name`; its HELP and TYPE lines are written with its first sample.
    pub fn family(&mut self, name: &str, kind: Kind, help: &str) -> Result<Family<'_>, TextError> {
        if !metric_name_ok(name) {
            return Err(TextError::MetricName(name.to_owned()));
        }
        if kind == Kind::Counter && !name.ends_with("_total") {
            return Err(TextError::CounterName(name.to_owned()));
        }
        if !self.names.insert(name.to_owned()) {
            return Err(TextError::Duplicate(name.to_owned()));
        }
        Ok(Family {
            out: &mut self.out,
            name: name.to_owned(),
            kind,
            help: help.to_owned(),
            started: false,
        })
    }

    /// The text.
    pub fn finish(self) -> String {
        self.out
    }
}

/// One family being written; its samples go straight after its HELP and TYPE lines.
#[derive(Debug)]
pub struct Family<'a> {
    out: &'a mut String,
    name: String,
    kind: Kind,
    help: String,
    started: bool,
}

impl Family<'_> {
    /// One sample with an integer value.
    pub fn sample(&mut self, labels: &[(&str, &str)], value: u64) -> Result<(), TextError> {
        self.line(labels, &value.to_string())
    }

    /// One sample with a float value (`+Inf`, `-Inf` and `NaN` as the format spells them).
    pub fn sample_f64(&mut self, labels: &[(&str, &str)], value: f64) -> Result<(), TextError> {
        let text = if value.is_nan() {
            "NaN".to_owned()
        } else if value.is_infinite() {
            if value > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
        } else {
            format!("{value}")
        };
        self.line(labels, &text)
    }

    fn line(&mut self, labels: &[(&str, &str)], value: &str) -> Result<(), TextError> {
        if let Some((bad, _)) = labels.iter().find(|(name, _)| !label_name_ok(name)) {
            return Err(TextError::LabelName((*bad).to_owned()));
        }
        if !self.started {
            self.started = true;
            let _ = writeln!(self.out, "# HELP {} {}", self.name, escape_help(&self.help));
            let _ = writeln!(self.out, "# TYPE {} {}", self.name, self.kind.word());
        }
        self.out.push_str(&self.name);
        if !labels.is_empty() {
            self.out.push('{');
            for (i, (name, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.out.push(',');
                }
                let _ = write!(self.out, "{name}=\"{}\"", escape_label(value));
            }
            self.out.push('}');
        }
        self.out.push(' ');
        self.out.push_str(value);
        self.out.push('\n');
        Ok(())
    }
}

/// A label value as the format wants it between quotes.
pub fn escape_label(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// HELP text as the format wants it (quotes stay as they are there).
pub fn escape_help(help: &str) -> String {
    help.replace('\\', "\\\\").replace('\n', "\\n")
}

/// A word (a counter's key in the API) made fit for a metric name: every character outside
/// `[a-zA-Z0-9_]` becomes `_`, and a leading digit gets a `_` before it.
pub fn name_part(word: &str) -> String {
    let mut out: String = word
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    if out.is_empty() || out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

fn metric_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == ':')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':')
}

fn label_name_ok(name: &str) -> bool {
    let mut chars = name.chars();
    !name.starts_with("__")
        && chars
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_family_is_help_type_then_its_samples() {
        let mut e = Exposition::new();
        let mut f = e
            .family(
                "nvo_drops_total",
                Kind::Counter,
                "Frames dropped, by reason.",
            )
            .unwrap();
        f.sample(&[("reason", "unknown_vni")], 3).unwrap();
        f.sample(&[("reason", "hairpin")], 0).unwrap();
        let mut g = e.family("nvo_up", Kind::Gauge, "Up.").unwrap();
        g.sample(&[], 1).unwrap();
        assert_eq!(
            e.finish(),
            "# HELP nvo_drops_total Frames dropped, by reason.\n\
             # TYPE nvo_drops_total counter\n\
             nvo_drops_total{reason=\"unknown_vni\"} 3\n\
             nvo_drops_total{reason=\"hairpin\"} 0\n\
             # HELP nvo_up Up.\n\
             # TYPE nvo_up gauge\n\
             nvo_up 1\n"
        );
    }

    #[test]
    fn label_values_and_help_are_escaped() {
        let mut e = Exposition::new();
        let mut f = e
            .family("nvo_x", Kind::Gauge, "a \\ back\nslash \"quoted\"")
            .unwrap();
        f.sample(&[("port", "a\"b\\c\nd"), ("vni", "1")], 7)
            .unwrap();
        let text = e.finish();
        assert_eq!(
            text,
            "# HELP nvo_x a \\\\ back\\nslash \"quoted\"\n\
             # TYPE nvo_x gauge\n\
             nvo_x{port=\"a\\\"b\\\\c\\nd\",vni=\"1\"} 7\n"
        );
        // Every line is one line: no raw newline escaped into a value.
        assert_eq!(text.lines().count(), 3);
    }

    #[test]
    fn one_type_per_family() {
        let mut e = Exposition::new();
        e.family("nvo_a_total", Kind::Counter, "A.")
            .unwrap()
            .sample(&[], 1)
            .unwrap();
        assert_eq!(
            e.family("nvo_a_total", Kind::Counter, "A again.")
                .unwrap_err(),
            TextError::Duplicate("nvo_a_total".into())
        );
        // Even a family that wrote nothing cannot come back.
        drop(e.family("nvo_b", Kind::Gauge, "B.").unwrap());
        assert!(e.family("nvo_b", Kind::Gauge, "B.").is_err());
        let text = e.finish();
        assert_eq!(text.matches("# TYPE nvo_a_total").count(), 1);
        assert!(
            !text.contains("nvo_b"),
            "a family without samples writes nothing"
        );
    }

    #[test]
    fn names_are_checked() {
        let mut e = Exposition::new();
        for bad in ["", "1abc", "nvo-drops", "nvo drops", "nvo_é"] {
            assert_eq!(
                e.family(bad, Kind::Gauge, "x").unwrap_err(),
                TextError::MetricName(bad.into())
            );
        }
        assert_eq!(
            e.family("nvo_drops", Kind::Counter, "x").unwrap_err(),
            TextError::CounterName("nvo_drops".into())
        );
        let mut f = e.family("nvo_ok", Kind::Gauge, "x").unwrap();
        for bad in ["__name__", "1a", "a-b", ""] {
            assert_eq!(
                f.sample(&[(bad, "v")], 1).unwrap_err(),
                TextError::LabelName(bad.into())
            );
        }
        f.sample(&[("_a1", "v")], 1).unwrap();
    }

    #[test]
    fn floats_use_the_formats_words() {
        let mut e = Exposition::new();
        let mut f = e.family("nvo_f", Kind::Gauge, "x").unwrap();
        f.sample_f64(&[("k", "a")], 0.25).unwrap();
        f.sample_f64(&[("k", "b")], f64::INFINITY).unwrap();
        f.sample_f64(&[("k", "c")], f64::NEG_INFINITY).unwrap();
        f.sample_f64(&[("k", "d")], f64::NAN).unwrap();
        let text = e.finish();
        for want in ["} 0.25\n", "} +Inf\n", "} -Inf\n", "} NaN\n"] {
            assert!(text.contains(want), "{want:?} in {text}");
        }
    }

    #[test]
    fn words_become_name_parts() {
        assert_eq!(name_part("rx_bytes"), "rx_bytes");
        assert_eq!(name_part("a-b.c"), "a_b_c");
        assert_eq!(name_part("4x"), "_4x");
        assert_eq!(name_part(""), "_");
    }
}
