//! Number formatting for people: fixed significant digits, units in headers.

use qexp_analysis::stats::Summary;

/// Formats with about three significant digits (`73.5`, `0.312`, `1520`).
pub fn num(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let decimals_for = |a: f64| {
        if a >= 100.0 {
            0
        } else if a >= 10.0 {
            1
        } else if a >= 1.0 {
            2
        } else {
            3
        }
    };
    // Decide on the rounded value: 9.996 is "10.0", not "10.00".
    let first = decimals_for(x.abs());
    let rounded: f64 = format!("{x:.first$}").parse().unwrap_or(x);
    let decimals = decimals_for(rounded.abs()).min(first);
    format!("{x:.decimals$}")
}

/// `median` and `[min–max]` of a summary, or dashes when absent.
pub fn center(s: &Option<Summary>) -> String {
    s.as_ref().map_or("–".into(), |s| num(s.median))
}

/// The spread shown beside a median: min–max across trials.
pub fn spread(s: &Option<Summary>) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{}–{}", num(s.min), num(s.max)),
        Some(_) => "n=1".into(),
        None => "–".into(),
    }
}

/// The interquartile range across trials, or a dash.
pub fn iqr(s: &Option<Summary>) -> String {
    match s {
        Some(s) if s.n > 1 => num(s.iqr),
        _ => "–".into(),
    }
}

/// The 95% confidence interval of the median, or why there is none: an
/// order-statistic interval needs at least 6 values to reach 95%.
pub fn ci95(s: &Option<Summary>) -> String {
    match s {
        Some(s) => match s.ci95 {
            Some((lo, hi)) => format!("{}–{}", num(lo), num(hi)),
            None => format!("none at n={} (needs 6)", s.n),
        },
        None => "–".into(),
    }
}

/// The coefficient of variation in percent, or a dash.
pub fn cv(s: &Option<Summary>) -> String {
    s.as_ref()
        .and_then(|s| s.cv)
        .map_or("–".into(), |cv| format!("{:.1}%", cv * 100.0))
}

/// [`center`] of a summary in seconds, shown in milliseconds.
pub fn center_ms(s: &Option<Summary>) -> String {
    s.as_ref().map_or("–".into(), |s| num(s.median * 1e3))
}

/// [`spread`] of a summary in seconds, shown in milliseconds.
pub fn spread_ms(s: &Option<Summary>) -> String {
    match s {
        Some(s) if s.n > 1 => format!("{}–{}", num(s.min * 1e3), num(s.max * 1e3)),
        Some(_) => "n=1".into(),
        None => "–".into(),
    }
}

/// Escapes text for a Markdown table cell.
pub fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// Makes text from a run (a model name, an error message) inert inside
/// Markdown that is later turned into HTML: every character that could open
/// markup (`<`, `&`, links, emphasis, code, table cells) is backslash-escaped,
/// which CommonMark turns back into the literal character, and newlines become
/// spaces so the text stays inside its paragraph or cell.
pub fn md_text(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '&' | '|' | '#' | '!' | '~' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// A token count as people write it: `1K`, `120K`, `2.5K`, `500`.
pub fn tokens(v: f64) -> String {
    if v.abs() >= 1000.0 {
        let k = v / 1000.0;
        if (k - k.round()).abs() < 1e-9 {
            format!("{}K", k.round())
        } else {
            format!(
                "{}K",
                format!("{k:.1}")
                    .trim_end_matches('0')
                    .trim_end_matches('.')
            )
        }
    } else {
        format!("{v}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn three_significant_digits() {
        assert_eq!(num(73.456), "73.5");
        assert_eq!(num(0.31234), "0.312");
        assert_eq!(num(1520.4), "1520");
        assert_eq!(num(2.604), "2.60");
        assert_eq!(num(f64::NAN), "–");
    }

    #[test]
    fn digits_follow_the_rounded_value() {
        assert_eq!(num(9.9996), "10.0");
        assert_eq!(num(99.97), "100");
        assert_eq!(num(0.99996), "1.00");
        assert_eq!(num(-9.9996), "-10.0");
        assert_eq!(num(9.994), "9.99");
    }

    #[test]
    fn md_text_neutralises_markup() {
        assert_eq!(
            md_text("<script>a|b</script>"),
            "\\<script\\>a\\|b\\</script\\>"
        );
        assert_eq!(
            md_text("[x](javascript:1)\nnext"),
            "\\[x\\](javascript:1) next"
        );
        assert_eq!(md_text("Qwen/Qwen3.6-27B"), "Qwen/Qwen3.6-27B");
    }

    #[test]
    fn token_counts() {
        assert_eq!(tokens(120000.0), "120K");
        assert_eq!(tokens(2500.0), "2.5K");
        assert_eq!(tokens(500.0), "500");
        assert_eq!(tokens(0.0), "0");
    }
}
