//! WAL record decoding (`wal::decode_with`, `wal::record_len`) in both formats. Input: a
//! mode byte (bit 0: compact `mtr` format, else `xlog`; bit 1: make the CRC right first, so
//! that the field parser is reached), then the record bytes.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mvcclab_engine::wal::{decode_with, record_len, Decoded, WalFormat};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let format = if mode & 1 != 0 {
        WalFormat::Mtr
    } else {
        WalFormat::Xlog
    };
    let mut bytes = rest.to_vec();
    if mode & 2 != 0 {
        match format {
            WalFormat::Xlog if bytes.len() >= 8 => {
                let tot = (u32::from_le_bytes(bytes[0..4].try_into().unwrap()) as usize)
                    .clamp(8, bytes.len());
                let crc = crc32c::crc32c_append(crc32c::crc32c(&bytes[8..tot]), &bytes[..4]);
                bytes[4..8].copy_from_slice(&crc.to_le_bytes());
            }
            WalFormat::Mtr => {
                if let Some(tot) =
                    record_len(format, &bytes).filter(|&t| t >= 4 && t <= bytes.len())
                {
                    let crc = crc32c::crc32c(&bytes[..tot - 4]);
                    bytes[tot - 4..tot].copy_from_slice(&crc.to_le_bytes());
                }
            }
            _ => {}
        }
    }
    let _ = record_len(format, &bytes);
    if let Decoded::Record(r) = decode_with(format, &bytes, 0x10_0000, 0x0F_0000) {
        assert!(r.end_lsn > r.lsn);
        for b in &r.blocks {
            if let Some(img) = &b.image {
                let mut page = vec![0u8; 8192];
                let _ = img.restore(&mut page);
            }
        }
    }
});
