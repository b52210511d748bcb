//! What `/proc` says of processes: the pids it lists, and a process's
//! state and group from its `stat` line.

use std::{fs, io};

/// The pids listed in `/proc`.
pub(crate) fn proc_pids() -> io::Result<impl Iterator<Item = i32>> {
    Ok(fs::read_dir("/proc")?
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok()))
}

/// The state letter and process group of a `/proc/<pid>/stat` line.
pub(crate) fn state_and_pgrp(stat: &str) -> Option<(char, i32)> {
    // The command name may contain spaces and parentheses; it ends at the last ')'.
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let _ppid = fields.next()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, pgrp))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_odd_command_names() {
        let stat = "4242 (my (odd) srv) S 1 4242 4242 0 -1 4194560";
        assert_eq!(state_and_pgrp(stat), Some(('S', 4242)));
        assert_eq!(state_and_pgrp("1 (x) Z 0 77 77"), Some(('Z', 77)));
        assert_eq!(state_and_pgrp("garbage"), None);
    }
}
