//! Hash externs (v1model `hash(out, algo, base, data, max)`) over chosen
//! header fields: CRC-16 and CRC-32 as bmv2 computes them, and identity.
//!
//! Fields are packed big-endian into a small stack buffer ([`HashInput`]), as
//! the hardware concatenates them; the CRC tables are built at compile time.

use crc::{Crc, Table, CRC_16_ARC, CRC_32_ISO_HDLC};
use serde::Serialize;

/// bmv2 `crc16`: polynomial 0x8005, reflected, init 0 (CRC-16/ARC).
// NOTE: slice-by-16 tables: the same CRC, computed 16 bytes per step.
const CRC16: Crc<u16, Table<16>> = Crc::<u16, Table<16>>::new(&CRC_16_ARC);
/// bmv2 `crc32`: the Ethernet CRC (CRC-32/ISO-HDLC).
const CRC32: Crc<u32, Table<16>> = Crc::<u32, Table<16>>::new(&CRC_32_ISO_HDLC);

/// v1model `HashAlgorithm` (the ones the model offers).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum HashAlgo {
    Crc16,
    Crc32,
    /// The low 32 bits of the concatenated fields.
    Identity,
}

impl HashAlgo {
    /// Hashes `bytes`.
    #[inline]
    pub fn compute(self, bytes: &[u8]) -> u32 {
        match self {
            HashAlgo::Crc16 => CRC16.checksum(bytes) as u32,
            HashAlgo::Crc32 => CRC32.checksum(bytes),
            HashAlgo::Identity => {
                let tail = &bytes[bytes.len().saturating_sub(4)..];
                tail.iter().fold(0u32, |acc, &b| (acc << 8) | b as u32)
            }
        }
    }

    /// Output width in bits.
    pub fn width(self) -> u8 {
        match self {
            HashAlgo::Crc16 => 16,
            HashAlgo::Crc32 | HashAlgo::Identity => 32,
        }
    }
}

/// Declaration of a hash extern: its algorithm and the fields it covers.
#[derive(Clone, Debug, Serialize)]
pub struct HashSpec {
    pub name: &'static str,
    pub algo: HashAlgo,
    /// (field name, width in bits), in the order they are concatenated.
    pub fields: Vec<(&'static str, u8)>,
}

/// Handle of a hash extern in its pipeline.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HashId(pub(crate) u16);

/// The concatenated fields a hash covers, big-endian, at most 48 bytes.
#[derive(Clone, Copy, Debug)]
pub struct HashInput {
    buf: [u8; 48],
    len: u8,
}

impl Default for HashInput {
    fn default() -> Self {
        Self::new()
    }
}

impl HashInput {
    pub const fn new() -> Self {
        HashInput {
            buf: [0; 48],
            len: 0,
        }
    }

    /// Appends `N` bytes in place (a fixed-size copy).
    #[inline(always)]
    fn put<const N: usize>(&mut self, bytes: [u8; N]) {
        let at = self.len as usize;
        self.buf[at..at + N].copy_from_slice(&bytes);
        self.len += N as u8;
    }

    #[inline(always)]
    pub fn u8(mut self, v: u8) -> Self {
        self.put([v]);
        self
    }
    #[inline(always)]
    pub fn u16(mut self, v: u16) -> Self {
        self.put(v.to_be_bytes());
        self
    }
    #[inline(always)]
    pub fn u32(mut self, v: u32) -> Self {
        self.put(v.to_be_bytes());
        self
    }
    #[inline(always)]
    pub fn u64(mut self, v: u64) -> Self {
        self.put(v.to_be_bytes());
        self
    }

    /// Appends several fields at once, in place: `[u8; N]` already big-endian.
    #[inline(always)]
    pub fn push_bytes<const N: usize>(&mut self, bytes: [u8; N]) {
        self.put(bytes);
    }

    #[inline(always)]
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len as usize]
    }

    /// Bits covered so far.
    #[inline(always)]
    pub fn bits(&self) -> u32 {
        self.len as u32 * 8
    }
}

/// Declared hash: spec and total width.
pub(crate) struct HashExtern {
    pub(crate) spec: HashSpec,
    pub(crate) input_bits: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crc_check_values() {
        // The catalogue check input "123456789".
        assert_eq!(HashAlgo::Crc16.compute(b"123456789"), 0xBB3D);
        assert_eq!(HashAlgo::Crc32.compute(b"123456789"), 0xCBF4_3926);
    }

    #[test]
    fn identity_is_low_32_bits_of_the_concatenation() {
        let input = HashInput::new().u16(0xAAAA).u32(0x0102_0304);
        assert_eq!(HashAlgo::Identity.compute(input.bytes()), 0x0102_0304);
        let short = HashInput::new().u16(0xBEEF);
        assert_eq!(HashAlgo::Identity.compute(short.bytes()), 0xBEEF);
        assert_eq!(input.bits(), 48);
    }
}
