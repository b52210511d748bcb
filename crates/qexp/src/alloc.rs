//! How the commands that read whole runs (`report`, `merge`, `diff`) use
//! glibc's malloc.
//!
//! A report or merge of a hundred million requests decodes row groups and
//! (trial, point)s of millions of rows one after another: buffers of tens of
//! megabytes, freed and allocated again and again. By default glibc serves
//! a block that large from its own mmap and unmaps it when freed, and
//! returns the heap's free top to the kernel, so every new buffer faults
//! its pages in afresh (2.5–3.6 million page faults and 7–9.5 s of system
//! time in a report of 100 M merged requests). Kept in the heap instead,
//! freed memory is reused: that report takes 25–27 s instead of 29–34 s,
//! at up to 0.2 GB more peak memory (docs/reports.md "Performance").

/// Serves blocks up to 32 MiB (glibc's largest mmap threshold) from the
/// heap, and keeps the heap's free memory for reuse instead of returning it
/// to the kernel. Without glibc (another libc, another OS): nothing.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
pub(crate) fn keep_freed_memory() {
    // SAFETY: mallopt sets one of malloc's tuning parameters; it takes
    // malloc's own locks and touches no memory of ours. A value it refuses
    // leaves the default, which is only slower.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}

/// See the glibc version: other platforms keep their allocator's defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn keep_freed_memory() {}
