//! The server's own CPU accounting: `getrusage(RUSAGE_SELF)` (getrusage(2)), which covers
//! every thread of the process, those that have exited included (the kernel adds an exiting
//! thread's times, faults and context switches to its thread group's `signal_struct`) —
//! what `/proc/PID/status` cannot give from outside, as its context-switch counts are the
//! main thread's alone. Read by clients as `SELECT * FROM mvcclab_stat_cpu`.

pub use mvcclab_workload::cpu::CpuUse;

/// This process's CPU use (all threads, exited ones included). Errors: getrusage's (none
/// on Linux for RUSAGE_SELF).
#[allow(unsafe_code)]
pub fn self_cpu() -> std::io::Result<CpuUse> {
    // Safety: getrusage writes one `rusage` into the zeroed value we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    Ok(CpuUse {
        user_us: us(ru.ru_utime),
        system_us: us(ru.ru_stime),
        voluntary_ctxt_switches: ru.ru_nvcsw as u64,
        involuntary_ctxt_switches: ru.ru_nivcsw as u64,
        minor_faults: ru.ru_minflt as u64,
        major_faults: ru.ru_majflt as u64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_exited_thread_s_cpu_stays_counted() {
        let before = self_cpu().unwrap();
        std::thread::spawn(|| {
            // Touch fresh pages (minor faults) and burn a little CPU.
            let v = vec![1u8; 8 << 20];
            let mut x = 0u64;
            for (i, b) in v.iter().enumerate() {
                x = x.wrapping_add(*b as u64 * i as u64);
            }
            std::hint::black_box(x);
        })
        .join()
        .unwrap();
        let after = self_cpu().unwrap();
        assert!(after.minor_faults > before.minor_faults);
        assert!(after.user_us + after.system_us > before.user_us + before.system_us);
    }
}
