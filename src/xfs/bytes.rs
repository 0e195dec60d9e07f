//! Byte buffers serialised as bytes, not as sequences of numbers: across
//! the page's worker boundary (serde-wasm-bindgen) they travel as one
//! `Uint8Array` instead of an array of numbers, one JS value per byte.
//! Use with `#[serde(with = "crate::xfs::bytes")]` on a `Vec<u8>` field.

use serde::de::{SeqAccess, Visitor};
use serde::{Deserializer, Serializer};

pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_bytes(v)
}

pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    struct Bytes;
    impl<'de> Visitor<'de> for Bytes {
        type Value = Vec<u8>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("bytes")
        }
        fn visit_bytes<E>(self, v: &[u8]) -> Result<Vec<u8>, E> {
            Ok(v.to_vec())
        }
        fn visit_byte_buf<E>(self, v: Vec<u8>) -> Result<Vec<u8>, E> {
            Ok(v)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Vec<u8>, A::Error> {
            let mut out = Vec::new();
            while let Some(x) = a.next_element::<u8>()? {
                out.push(x);
            }
            Ok(out)
        }
    }
    d.deserialize_byte_buf(Bytes)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
#[allow(clippy::unwrap_used)]
mod tests {
    #[derive(serde::Serialize, serde::Deserialize, PartialEq, Debug)]
    struct T {
        #[serde(with = "super")]
        b: Vec<u8>,
    }

    #[test]
    fn round_trips_and_reads_number_arrays() {
        let t = T { b: vec![0, 1, 255] };
        let j = serde_json::to_string(&t).unwrap();
        assert_eq!(j, r#"{"b":[0,1,255]}"#);
        assert_eq!(serde_json::from_str::<T>(&j).unwrap(), t);
    }
}
