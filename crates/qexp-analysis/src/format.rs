//! Numbers for people, in one place: the flag sentences here, the report's
//! tables, charts and narratives in qexp-report, and the terminal all format
//! through these functions.

/// A count with its noun in the number it takes: `1 run`, `2 runs`.
pub fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Three significant digits, trailing zeros trimmed: 9.8, 15.1, 505, 0.25
/// ("n/a" when not finite).
pub fn sig3(v: f64) -> String {
    if !v.is_finite() {
        return "n/a".into();
    }
    if v == 0.0 {
        return "0".into();
    }
    let decimals = (2 - v.abs().log10().floor() as i32).max(0) as usize;
    let s = format!("{v:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// About three significant digits, trailing zeros kept, as table cells
/// print them (`73.5`, `0.312`, `1520`, `2.60`; a dash when not finite).
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

/// Seconds with a unit: `9.8 s`, `310 ms`.
pub fn seconds(v: f64) -> String {
    if !v.is_finite() {
        "n/a".into()
    } else if v.abs() < 1.0 && v != 0.0 {
        format!("{} ms", sig3(v * 1000.0))
    } else {
        format!("{} s", sig3(v))
    }
}

/// Token rate with a unit: `505 tok/s`, `73.6 tok/s`.
pub fn tok_s(v: f64) -> String {
    format!("{} tok/s", sig3(v))
}

/// A fraction as a percentage to three significant digits: `10%`, `0.2%`, `-35.1%`.
pub fn percent(f: f64) -> String {
    if f.is_finite() {
        format!("{}%", sig3(f * 100.0))
    } else {
        "n/a".into()
    }
}

/// A fraction as a percentage with one decimal: `12.5%` (the tables' CV and hit rates).
pub fn percent1(f: f64) -> String {
    format!("{:.1}%", f * 100.0)
}

/// A fraction as a percentage for prose, with a real minus sign and no
/// decimal from 10% up: `−12%`, `4.2%`.
pub fn percent_prose(f: f64) -> String {
    let v = f * 100.0;
    let s = if v.abs() >= 10.0 {
        format!("{:.0}%", v.abs())
    } else {
        format!("{:.1}%", v.abs())
    };
    if v < 0.0 && !s.trim_end_matches(['0', '.', '%']).is_empty() {
        format!("−{s}")
    } else {
        s
    }
}

/// An integer with thousands separators: `98,304`.
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
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
    fn counts_take_their_number() {
        assert_eq!(plural(1, "run", "runs"), "1 run");
        assert_eq!(plural(0, "run", "runs"), "0 runs");
        assert_eq!(plural(2, "run", "runs"), "2 runs");
    }

    #[test]
    fn sentences_have_three_significant_digits_and_units() {
        assert_eq!(seconds(9.8), "9.8 s");
        assert_eq!(seconds(15.1), "15.1 s");
        assert_eq!(seconds(61.0), "61 s");
        assert_eq!(seconds(0.31), "310 ms");
        assert_eq!(seconds(0.0123), "12.3 ms");
        assert_eq!(seconds(f64::NAN), "n/a");
        assert_eq!(tok_s(505.4), "505 tok/s");
        assert_eq!(tok_s(73.6), "73.6 tok/s");
        assert_eq!(percent(0.10), "10%");
        assert_eq!(percent(0.052), "5.2%");
        assert_eq!(percent(-0.351), "-35.1%");
        assert_eq!(thousands(98_304), "98,304");
        assert_eq!(thousands(400), "400");
    }

    #[test]
    fn cells_keep_three_significant_digits() {
        assert_eq!(num(73.456), "73.5");
        assert_eq!(num(0.31234), "0.312");
        assert_eq!(num(1520.4), "1520");
        assert_eq!(num(2.604), "2.60");
        assert_eq!(num(f64::NAN), "–");
    }

    #[test]
    fn cell_digits_follow_the_rounded_value() {
        assert_eq!(num(9.9996), "10.0");
        assert_eq!(num(99.97), "100");
        assert_eq!(num(0.99996), "1.00");
        assert_eq!(num(-9.9996), "-10.0");
        assert_eq!(num(9.994), "9.99");
    }

    #[test]
    fn percentages() {
        assert_eq!(percent1(0.125), "12.5%");
        assert_eq!(percent_prose(-0.12), "−12%");
        assert_eq!(percent_prose(0.042), "4.2%");
        assert_eq!(percent_prose(-0.0001), "0.0%");
    }

    #[test]
    fn token_counts() {
        assert_eq!(tokens(120000.0), "120K");
        assert_eq!(tokens(2500.0), "2.5K");
        assert_eq!(tokens(500.0), "500");
        assert_eq!(tokens(0.0), "0");
    }
}
