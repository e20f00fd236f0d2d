//! The throttle is a lower bound: N MiB at B MiB/s never completes before N/B seconds.

use mvcclab_engine::device::{MemDevice, Nvme, NvmeConfig, ThrottleConfig};
use mvcclab_engine::stats::{enter, Cause, Stats};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[test]
fn a_transfer_of_n_mib_at_b_mib_s_takes_at_least_n_over_b() {
    let cfg = NvmeConfig {
        throttle: ThrottleConfig {
            write_mib_s: Some(64.0),
            read_mib_s: Some(128.0),
            ..Default::default()
        },
        ..Default::default()
    };
    let nvme =
        Arc::new(Nvme::new(Box::new(MemDevice::new()), &cfg, Arc::new(Stats::new())).unwrap());
    nvme.create(1).unwrap();
    // 8 MiB written by 4 threads in 64 KiB calls: at least 8/64 s = 125 ms.
    let start = Instant::now();
    let threads: Vec<_> = (0..4u64)
        .map(|t| {
            let nvme = nvme.clone();
            std::thread::spawn(move || {
                let _c = enter(Cause::Load);
                let buf = vec![t as u8; 65536];
                for i in 0..32u64 {
                    nvme.write_at(1, (t * 32 + i) * 65536, &buf).unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let wrote = start.elapsed();
    assert!(
        wrote >= Duration::from_millis(125),
        "8 MiB at 64 MiB/s took {wrote:?}"
    );
    // 8 MiB read at 128 MiB/s: at least 62.5 ms.
    let start = Instant::now();
    let mut buf = vec![0u8; 1 << 20];
    for i in 0..8u64 {
        nvme.read_at(1, i << 20, &mut buf).unwrap();
    }
    assert!(
        start.elapsed() >= Duration::from_micros(62_500),
        "{:?}",
        start.elapsed()
    );
    let s = nvme.stats().snapshot();
    let load = s.cause(Cause::Load);
    assert_eq!(load.write_bytes, 8 << 20);
    assert_eq!((load.write_blocks_4k, load.write_requests), (2048, 512));
    assert!(
        load.device_wait_us >= 125_000,
        "waits are counted per cause: {load:?}"
    );
}

#[test]
fn latency_applies_per_request() {
    let cfg = NvmeConfig {
        throttle: ThrottleConfig {
            latency_us: Some(1000),
            queue_depth: Some(1),
            ..Default::default()
        },
        ..Default::default()
    };
    let nvme = Nvme::new(Box::new(MemDevice::new()), &cfg, Arc::new(Stats::new())).unwrap();
    nvme.create(1).unwrap();
    let start = Instant::now();
    // 64 KiB = 4 requests of 16 KiB, queue depth 1: 4 ms at least.
    nvme.write_at(1, 0, &[0u8; 65536]).unwrap();
    assert!(
        start.elapsed() >= Duration::from_millis(4),
        "{:?}",
        start.elapsed()
    );
}
