//! Hash externs (v1model `hash(out, algo, base, data, max)`) over chosen
//! header fields: CRC-16 and CRC-32 as bmv2 computes them, and identity.
//!
//! Fields are packed big-endian into a small stack buffer ([`HashInput`]), as
//! the hardware concatenates them; the CRC tables are built at compile time.

use crc::{Crc, Table, CRC_16_ARC, CRC_32_ISO_HDLC};
use pisanet_net::Packet;
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

/// A reflected CRC of at most 32 bits computed "slice-by-n" for inputs of
/// at most [`SMALL`] bytes: `tables[k][b]` is the register after byte `b`
/// followed by `k` zero bytes, so the `n` lookups of an `n`-byte input are
/// independent (a byte-at-a-time loop, as the `crc` crate runs below 16
/// bytes, is a chain of `n` dependent loads). Longer inputs go to the crate.
/// Equal to the crate's CRC for every input (tested).
struct SmallCrc {
    tables: [[u32; 256]; SMALL],
    init: u32,
    xorout: u32,
}

/// Longest input [`SmallCrc`] computes itself (the 5-tuple is 13 bytes).
const SMALL: usize = 16;

impl SmallCrc {
    /// `poly_reflected`: the bit-reversed polynomial, e.g. 0xEDB88320.
    const fn new(poly_reflected: u32, init: u32, xorout: u32) -> Self {
        let mut tables = [[0u32; 256]; SMALL];
        let mut b = 0;
        while b < 256 {
            let mut r = b as u32;
            let mut i = 0;
            while i < 8 {
                r = if r & 1 == 1 {
                    (r >> 1) ^ poly_reflected
                } else {
                    r >> 1
                };
                i += 1;
            }
            tables[0][b] = r;
            b += 1;
        }
        let mut k = 1;
        while k < SMALL {
            let mut b = 0;
            while b < 256 {
                let prev = tables[k - 1][b];
                tables[k][b] = (prev >> 8) ^ tables[0][(prev & 0xff) as usize];
                b += 1;
            }
            k += 1;
        }
        SmallCrc {
            tables,
            init,
            xorout,
        }
    }

    /// The CRC of exactly `N <= SMALL` bytes, unrolled: the register's
    /// initial bytes combine with the first input bytes (reflected: low byte
    /// first); past a short input's end the rest of it is shifted out.
    #[inline(always)]
    fn fixed<const N: usize>(&self, bytes: &[u8; N]) -> u32 {
        let mut acc = if N < 4 { self.init >> (8 * N) } else { 0 };
        let mut i = 0;
        while i < N {
            let x = if i < 4 {
                bytes[i] ^ (self.init >> (8 * i)) as u8
            } else {
                bytes[i]
            };
            acc ^= self.tables[N - 1 - i][x as usize];
            i += 1;
        }
        acc ^ self.xorout
    }

    /// The CRC of `bytes` (at most [`SMALL`]), or None if longer.
    #[inline(always)]
    fn checksum(&self, bytes: &[u8]) -> Option<u32> {
        macro_rules! by_len {
            ($($n:literal)*) => {
                match bytes.len() {
                    $($n => Some(self.fixed::<$n>(bytes.try_into().expect("length matched"))),)*
                    _ => None,
                }
            };
        }
        by_len!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16)
    }
}

static CRC32_SMALL: SmallCrc = SmallCrc::new(0xEDB8_8320, 0xFFFF_FFFF, 0xFFFF_FFFF);
static CRC16_SMALL: SmallCrc = SmallCrc::new(0xA001, 0, 0);

/// bmv2's `crc32` (CRC-32/ISO-HDLC) of `bytes`.
#[inline]
pub fn crc32(bytes: &[u8]) -> u32 {
    CRC32_SMALL
        .checksum(bytes)
        .unwrap_or_else(|| CRC32.checksum(bytes))
}

/// bmv2's `crc32` of exactly 13 bytes (a 5-tuple): what [`crc32`] computes
/// on them, without the dispatch on the length.
#[inline(always)]
pub(crate) fn crc32_13(bytes: &[u8; 13]) -> u32 {
    CRC32_SMALL.fixed::<13>(bytes)
}

/// Fields of [`five_tuple_bytes`], as a hash declares them.
pub const FIVE_TUPLE_FIELDS: [(&str, u8); 5] = [
    ("hdr.ipv4.src", 32),
    ("hdr.ipv4.dst", 32),
    ("hdr.ipv4.proto", 8),
    ("l4.sport", 16),
    ("l4.dport", 16),
];

/// The 5-tuple as a hash unit concatenates it ([`FIVE_TUPLE_FIELDS`]:
/// source, destination, protocol, source port, destination port; big-
/// endian, 13 bytes; ports 0 for a packet without TCP or UDP).
#[inline(always)]
pub fn five_tuple_bytes(pkt: &Packet) -> [u8; 13] {
    let (src, dst, proto, sport, dport) = pkt.five_tuple();
    let (s, d, sp, dp) = (
        src.to_be_bytes(),
        dst.to_be_bytes(),
        sport.to_be_bytes(),
        dport.to_be_bytes(),
    );
    [
        s[0], s[1], s[2], s[3], d[0], d[1], d[2], d[3], proto, sp[0], sp[1], dp[0], dp[1],
    ]
}

/// bmv2's `crc16` (CRC-16/ARC) of `bytes`.
#[inline]
pub fn crc16(bytes: &[u8]) -> u16 {
    match CRC16_SMALL.checksum(bytes) {
        Some(c) => c as u16,
        None => CRC16.checksum(bytes),
    }
}

impl HashAlgo {
    /// Hashes `bytes`.
    #[inline(always)]
    pub fn compute(self, bytes: &[u8]) -> u32 {
        match self {
            HashAlgo::Crc16 => crc16(bytes) as u32,
            HashAlgo::Crc32 => crc32(bytes),
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

    proptest::proptest! {
        #[test]
        fn crc32_of_13_bytes_is_crc32(bytes in proptest::array::uniform13(proptest::num::u8::ANY)) {
            proptest::prop_assert_eq!(crc32_13(&bytes), crc32(&bytes));
            proptest::prop_assert_eq!(crc32_13(&bytes), CRC32.checksum(&bytes));
        }

        #[test]
        fn small_crc_equals_the_crate(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..40)) {
            proptest::prop_assert_eq!(crc32(&bytes), CRC32.checksum(&bytes));
            proptest::prop_assert_eq!(crc16(&bytes), CRC16.checksum(&bytes));
        }
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
