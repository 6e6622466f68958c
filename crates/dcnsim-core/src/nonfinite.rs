//! Non-finite numbers (NaN, infinities) in scenario documents, rejected naming the field.
//!
//! TOML writes them `nan`, `inf`, `-inf`; Python's `json.dumps` writes `NaN`, `Infinity`,
//! `-Infinity`, which JSON does not allow. Neither can reach a field as a number (the TOML
//! to JSON conversion would turn them into `null`, giving a misleading "missing field" or
//! "invalid type: null"), so both readers look for them first and name the field and the
//! value they found.

use crate::config::FieldError;
use crate::scenario::ScenarioError;

/// Marker a non-finite JSON token is rewritten to before the document is parsed again.
const MARK: &str = "\u{1}nonfinite:";

fn found(path: &str, value: &str) -> ScenarioError {
    let path = if path.is_empty() { "scenario".to_string() } else { path.to_string() };
    ScenarioError::Field(FieldError::invalid(
        path,
        format!("is not a finite number ({value})"),
        "give a finite value (NaN and infinities are not accepted)",
    ))
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Reject a non-finite float anywhere in a TOML document.
pub fn check_toml(v: &toml::Value) -> Result<(), ScenarioError> {
    fn walk(v: &toml::Value, path: &str) -> Result<(), ScenarioError> {
        match v {
            toml::Value::Float(f) if !f.is_finite() => Err(found(path, &f.to_string())),
            toml::Value::Array(a) => a.iter().enumerate().try_for_each(|(i, x)| walk(x, &format!("{path}[{i}]"))),
            toml::Value::Table(t) => t.iter().try_for_each(|(k, x)| walk(x, &child(path, k))),
            _ => Ok(()),
        }
    }
    walk(v, "")
}

/// Parse a JSON scenario; a `NaN` / `Infinity` / `-Infinity` token is reported with its field.
pub fn parse_json(text: &str) -> Result<serde_json::Value, ScenarioError> {
    let first = match serde_json::from_str(text) {
        Ok(v) => return Ok(v),
        Err(e) => ScenarioError::Syntax { message: e.to_string() },
    };
    let Some(marked) = mark_nonfinite(text) else { return Err(first) };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&marked) else { return Err(first) };
    fn walk(v: &serde_json::Value, path: &str) -> Option<ScenarioError> {
        match v {
            serde_json::Value::String(s) => s.strip_prefix(MARK).map(|tok| found(path, tok)),
            serde_json::Value::Array(a) => a.iter().enumerate().find_map(|(i, x)| walk(x, &format!("{path}[{i}]"))),
            serde_json::Value::Object(m) => m.iter().find_map(|(k, x)| walk(x, &child(path, k))),
            _ => None,
        }
    }
    Err(walk(&v, "").unwrap_or(first))
}

/// `text` with every non-finite token outside strings replaced by a marked string; `None`
/// when there is none.
fn mark_nonfinite(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut in_str = false;
    let mut escaped = false;
    let mut any = false;
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if in_str {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if c == '"' {
            in_str = true;
        } else if let Some(tok) = ["-Infinity", "Infinity", "NaN"].into_iter().find(|t| rest.starts_with(t)) {
            out.push_str(&format!("\"\\u0001nonfinite:{tok}\""));
            rest = &rest[tok.len()..];
            any = true;
            continue;
        }
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    any.then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_nan_is_named_by_its_field() {
        let e = parse_json(r#"{"workload": [{"load": NaN}], "x": "NaN inside a string"}"#).unwrap_err();
        assert_eq!(e.field(), "workload[0].load");
        assert!(e.to_string().contains("NaN"), "{e}");
        let e = parse_json(r#"{"a": {"b": -Infinity}}"#).unwrap_err();
        assert_eq!(e.field(), "a.b");
        // A real syntax error stays a syntax error.
        assert!(matches!(parse_json("{\"a\": }"), Err(ScenarioError::Syntax { .. })));
        assert!(matches!(parse_json("{\"a\": NaNx}"), Err(ScenarioError::Syntax { .. })));
    }

    #[test]
    fn toml_inf_is_named_by_its_field() {
        let t: toml::Value = toml::from_str("[network]\necn_lambda = inf\n").unwrap();
        let e = check_toml(&t).unwrap_err();
        assert_eq!(e.field(), "network.ecn_lambda");
        assert!(e.to_string().contains("inf"), "{e}");
    }
}
