//! Reading a frame's JSON the way a `serde_json::Value` is read, without building the `Value`.
//!
//! The stream assemblers read an event by key, as `value.get("delta").and_then(Value::as_str)`
//! does: a key that is missing, or holds another type than the one looked for, is "nothing
//! there", and a key given twice counts once, the last time. Building a `Value` for each of the
//! many small delta events of a stream (a map, a `String` per key and per string) costs more
//! than the rest of the reassembly together, so the hot events are read into structs declared
//! with [`lenient_struct!`], whose fields keep those rules:
//!
//! - every field, and every struct, accepts any JSON value and keeps only what it understands
//!   ([`Str`], [`U64`], [`Bool`]; a struct from anything but an object is its default);
//! - [`Present`] (a struct) and [`Raw`] (a value kept unread, for the rare parts read as a
//!   `Value` when they come) tell a key given from a key missing, whatever its value (`null`
//!   included), as `Value::get(…).is_some()` does;
//! - [`Object`] is a struct only when its key holds an object (`Value::as_object`), and
//!   [`WithText`] keeps a value's JSON text beside what is read of it (a part kept as it came
//!   when it is of a kind read whole);
//! - strings are borrowed from the frame when they have no escapes, and what the struct does
//!   not name is skipped, never built;
//! - a struct is read in place ([`Fill`]), field by field, so the nested structs of an event
//!   are never copied from one return value into the next.
//!
//! A frame that is not JSON is refused as a `Value` read refuses it: the parser is the same,
//! only what it builds differs. Most frames are read on a quick path ([`quick`]) that reads
//! the JSON streams send straight into the struct, as `serde_json` reads it; what it does not
//! read (an odd number, a surrogate escape, an error) is read again by `serde_json`, so what is
//! accepted, refused and skipped, with which error, is `serde_json`'s.

use std::borrow::Cow;
use std::fmt;

use llm_tools_core::ProviderError;
use serde::de::{
    Deserialize, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor,
};
use serde_json::value::RawValue;

mod quick;

pub(crate) use quick::{Bail, Quick, Reader, Scalar};

/// Reads a value into a place that holds its default, without moving it: the lenient structs
/// are read field by field where they lie, so the nested structs of an event are never copied
/// from one return value to the next.
pub(crate) trait Fill<'de>: Default {
    /// Reads `d` into `into` (which holds the default).
    fn fill<D: Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error>;

    /// Reads the value at `r` into `into` (which holds the default) on the quick path, exactly
    /// as [`fill`](Self::fill) reads it, or [`Bail`]s (then `serde_json` reads the frame again
    /// from its start). Without a quick path of its own, a type always bails.
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        let _ = (r, into);
        Err(Bail)
    }
}

/// The seed that fills a place.
pub(crate) struct Seed<'s, T>(pub(crate) &'s mut T);

impl<'de, T: Fill<'de>> DeserializeSeed<'de> for Seed<'_, T> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        T::fill(d, self.0)
    }
}

/// Reads a frame's JSON into `into` (which holds the default), as `serde_json::from_str` reads
/// (trailing characters refused); on an error, what `into` holds is not to be used. The quick
/// path reads it when it can, else `serde_json` does.
pub(crate) fn parse_into<'a, T: Fill<'a>>(data: &'a str, into: &mut T) -> serde_json::Result<()> {
    if read_quick(data, into).is_ok() {
        return Ok(());
    }
    *into = T::default();
    read_with_serde(data, into)
}

/// The quick path of [`parse_into`].
fn read_quick<'a, T: Fill<'a>>(data: &'a str, into: &mut T) -> Quick {
    let mut r = Reader::new(data);
    T::fill_quick(&mut r, into)?;
    r.end()
}

/// [`parse_into`] by `serde_json`.
fn read_with_serde<'a, T: Fill<'a>>(data: &'a str, into: &mut T) -> serde_json::Result<()> {
    let mut de = serde_json::Deserializer::from_str(data);
    T::fill(&mut de, into)?;
    de.end()
}

/// Reads a stream event into `into`, `true`; an unreadable one is skipped as
/// [`UnreadableEvents::read`](crate::wire::UnreadableEvents::read) skips it, `false` (past the
/// bound on them, the stream's error).
pub(crate) fn read_event_into<'a, T: Fill<'a>>(
    unreadable: &mut crate::wire::UnreadableEvents,
    name: &str,
    data: &'a str,
    into: &mut T,
) -> Result<bool, ProviderError> {
    match parse_into(data, into) {
        Ok(()) => Ok(true),
        Err(error) => unreadable.skip(name, &error).map(|()| false),
    }
}

struct ScalarVisitor;

impl<'de> Visitor<'de> for ScalarVisitor {
    type Value = Scalar<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Self::Value, E> {
        Ok(Scalar::Bool(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Self::Value, E> {
        Ok(Scalar::U64(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Self::Value, E> {
        Ok(u64::try_from(v).map_or(Scalar::Other, Scalar::U64))
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Borrowed(v)))
    }
    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E>(self, v: String) -> Result<Self::Value, E> {
        Ok(Scalar::Str(Cow::Owned(v)))
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Scalar::Other)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        skip_seq(seq).map(|()| Scalar::Other)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        skip_map(map).map(|()| Scalar::Other)
    }
}

/// Reads an array through, keeping nothing.
pub(crate) fn skip_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<(), A::Error> {
    while seq.next_element::<IgnoredAny>()?.is_some() {}
    Ok(())
}

/// Reads an object through, keeping nothing.
pub(crate) fn skip_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<(), A::Error> {
    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
    Ok(())
}

impl<'a> Scalar<'a> {
    fn into_str(self) -> Option<Cow<'a, str>> {
        match self {
            Scalar::Str(s) => Some(s),
            _ => None,
        }
    }

    fn as_u64(&self) -> Option<u64> {
        match *self {
            Scalar::U64(n) => Some(n),
            _ => None,
        }
    }

    fn as_bool(&self) -> Option<bool> {
        match *self {
            Scalar::Bool(b) => Some(b),
            _ => None,
        }
    }
}

impl<'de> Deserialize<'de> for Scalar<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ScalarVisitor)
    }
}

/// A string, or `None` when the value is anything else (`Value::as_str`).
#[derive(Debug, Default)]
pub(crate) struct Str<'a>(pub(crate) Option<Cow<'a, str>>);

impl<'a> Str<'a> {
    /// The string, when there is one.
    pub(crate) fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// The string taken out, when there is one and it is not empty (so a string that had
    /// escapes, read into a `String`, is moved on rather than copied).
    pub(crate) fn take_filled(&mut self) -> Option<Cow<'a, str>> {
        self.0.take().filter(|s| !s.is_empty())
    }
}

impl<'de: 'a, 'a> Fill<'de> for Str<'a> {
    fn fill<D: Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error> {
        into.0 = Scalar::deserialize(d)?.into_str();
        Ok(())
    }
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        into.0 = r.scalar()?.into_str();
        Ok(())
    }
}

/// A non-negative integer, or `None` (`Value::as_u64`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct U64(pub(crate) Option<u64>);

impl<'de> Fill<'de> for U64 {
    fn fill<D: Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error> {
        into.0 = Scalar::deserialize(d)?.as_u64();
        Ok(())
    }
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        into.0 = r.scalar()?.as_u64();
        Ok(())
    }
}

/// A boolean, or `None` (`Value::as_bool`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Bool(pub(crate) Option<bool>);

impl<'de> Fill<'de> for Bool {
    fn fill<D: Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error> {
        into.0 = Scalar::deserialize(d)?.as_bool();
        Ok(())
    }
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        into.0 = r.scalar()?.as_bool();
        Ok(())
    }
}

/// A value kept unread when its key is there, whatever the value (`null` included): `Some`
/// exactly when `Value::get` would find it.
#[derive(Debug, Default)]
pub(crate) struct Raw<'a>(pub(crate) Option<RawText<'a>>);

impl Raw<'_> {
    /// The value read as a `Value` when it is there; unreadable means "nothing there" (as
    /// [`wire::value_of`](crate::wire::value_of) reads a `RawValue`).
    pub(crate) fn value(&self) -> Option<serde_json::Value> {
        self.0.and_then(|r| serde_json::from_str(r.get()).ok())
    }
}

/// A value's JSON text, as it stands in the frame (a `RawValue`'s).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RawText<'a>(&'a str);

impl<'a> RawText<'a> {
    /// The value's text.
    pub(crate) fn get(&self) -> &'a str {
        self.0
    }
}

impl<'de: 'a, 'a> Fill<'de> for Raw<'a> {
    fn fill<D: Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error> {
        into.0 = Some(RawText(<&RawValue>::deserialize(d)?.get()));
        Ok(())
    }
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        into.0 = Some(RawText(r.raw()?));
        Ok(())
    }
}

/// A struct's value when its key is there, whatever the value (`null` included): `Some`
/// exactly when `Value::get` would find it.
#[derive(Debug)]
pub(crate) struct Present<T>(pub(crate) Option<T>);

impl<T> Default for Present<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Fill<'de>> Fill<'de> for Present<T> {
    fn fill<D: Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error> {
        T::fill(d, into.0.insert(T::default()))
    }
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        T::fill_quick(r, into.0.insert(T::default()))
    }
}

/// The elements of an array, each read as `T` (`Value::as_array`); anything but an array is
/// none.
// (Read by the Chat Completions and Gemini streams only.)
#[cfg_attr(not(any(feature = "openai", feature = "gemini")), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct List<T>(pub(crate) Vec<T>);

impl<T> Default for List<T> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<'de, T: Fill<'de>> Fill<'de> for List<T> {
    fn fill<D: Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error> {
        into.0.clear();
        d.deserialize_any(ElementsVisitor(&mut into.0))
    }
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        into.0.clear();
        r.array(|r, _| {
            let mut element = T::default();
            T::fill_quick(r, &mut element)?;
            into.0.push(element);
            Ok(())
        })
    }
}

/// The first element of an array, read as `T` (`Value::get(0)`), the others skipped unread;
/// anything but an array, or an empty one, is none.
// (Read by the Chat Completions and Gemini streams only.)
#[cfg_attr(not(any(feature = "openai", feature = "gemini")), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct First<T>(pub(crate) Option<T>);

impl<T> Default for First<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Fill<'de>> Fill<'de> for First<T> {
    fn fill<D: Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error> {
        into.0 = None;
        d.deserialize_any(FirstVisitor(&mut into.0))
    }
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        into.0 = None;
        r.array(|r, i| match i {
            0 => T::fill_quick(r, into.0.insert(T::default())),
            _ => r.skip(),
        })
    }
}

/// The methods of a [`Visitor`] with `Value = ()` that read a string, a number, a boolean or
/// `null` as nothing (what is not an array or an object is skipped).
macro_rules! skip_scalars {
    () => {
        fn visit_bool<E>(self, _: bool) -> Result<(), E> {
            Ok(())
        }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> {
            Ok(())
        }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> {
            Ok(())
        }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> {
            Ok(())
        }
        fn visit_str<E>(self, _: &str) -> Result<(), E> {
            Ok(())
        }
        fn visit_unit<E>(self) -> Result<(), E> {
            Ok(())
        }
    };
}

pub(crate) use skip_scalars;

/// A struct's value when its key holds an object (as `Value::as_object` finds one); anything
/// else, `null` included, is none.
// (Read by the Gemini stream only.)
#[cfg_attr(not(feature = "gemini"), allow(dead_code))]
#[derive(Debug)]
pub(crate) struct Object<T>(pub(crate) Option<T>);

impl<T> Default for Object<T> {
    fn default() -> Self {
        Self(None)
    }
}

impl<'de, T: Fill<'de>> Fill<'de> for Object<T> {
    fn fill<D: Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error> {
        into.0 = None;
        d.deserialize_any(ObjectVisitor(&mut into.0))
    }
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        into.0 = None;
        match r.peek()? {
            b'{' => T::fill_quick(r, into.0.insert(T::default())),
            _ => r.scalar().map(drop),
        }
    }
}

/// Reads an object into a place; anything else is skipped.
#[cfg_attr(not(feature = "gemini"), allow(dead_code))]
struct ObjectVisitor<'v, T>(&'v mut Option<T>);

impl<'de, T: Fill<'de>> Visitor<'de> for ObjectVisitor<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        T::fill(
            serde::de::value::MapAccessDeserializer::new(map),
            self.0.insert(T::default()),
        )
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<(), A::Error> {
        skip_seq(seq)
    }
    skip_scalars!();
}

/// A value read as `T` with its JSON text as it stands in the frame (for a part that is read
/// by a few keys, and kept whole when it is of a kind kept as it came).
// (Read by the Gemini stream only.)
#[cfg_attr(not(feature = "gemini"), allow(dead_code))]
#[derive(Debug, Default)]
pub(crate) struct WithText<'a, T> {
    /// The value's text (always there once read).
    pub(crate) text: Option<RawText<'a>>,
    pub(crate) value: T,
}

impl<'de: 'a, 'a, T: Fill<'de>> Fill<'de> for WithText<'a, T> {
    fn fill<D: Deserializer<'de>>(d: D, into: &mut Self) -> Result<(), D::Error> {
        let raw = <&RawValue>::deserialize(d)?.get();
        into.text = Some(RawText(raw));
        // (JSON `serde_json` has read already, read again: an error here is a nesting limit.)
        parse_into(raw, &mut into.value).map_err(serde::de::Error::custom)
    }
    fn fill_quick(r: &mut Reader<'de>, into: &mut Self) -> Quick {
        let raw = r.text_of(|r| T::fill_quick(r, &mut into.value))?;
        into.text = Some(RawText(raw));
        Ok(())
    }
}

/// Reads an array's first element in place, skipping the others; anything but an array is
/// skipped.
// (Read by the Chat Completions and Gemini streams only.)
#[cfg_attr(not(any(feature = "openai", feature = "gemini")), allow(dead_code))]
struct FirstVisitor<'v, T>(&'v mut Option<T>);

impl<'de, T: Fill<'de>> Visitor<'de> for FirstVisitor<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let first = self.0.insert(T::default());
        if seq.next_element_seed(Seed(first))?.is_none() {
            // (An empty array: no first element.)
            *self.0 = None;
            return Ok(());
        }
        skip_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        skip_map(map)
    }
    skip_scalars!();
}

/// Reads an array's elements into a vector; anything but an array is skipped.
// (Read by the Chat Completions and Gemini streams only.)
#[cfg_attr(not(any(feature = "openai", feature = "gemini")), allow(dead_code))]
struct ElementsVisitor<'v, T>(&'v mut Vec<T>);

impl<'de, T: Fill<'de>> Visitor<'de> for ElementsVisitor<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        loop {
            let mut element = T::default();
            if seq.next_element_seed(Seed(&mut element))?.is_none() {
                return Ok(());
            }
            self.0.push(element);
        }
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<(), A::Error> {
        skip_map(map)
    }
    skip_scalars!();
}

/// An object's key, borrowed when it has no escapes.
pub(crate) struct Key<'a>(pub(crate) Cow<'a, str>);

impl<'de> Deserialize<'de> for Key<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Scalar::deserialize(d)? {
            Scalar::Str(s) => Ok(Self(s)),
            // (JSON keys are strings; another deserializer's would be unknown keys.)
            _ => Ok(Self(Cow::Borrowed(""))),
        }
    }
}

/// Declares a struct read leniently from JSON ([`Fill`]): each field from its key (`field:
/// Type = "key"`, every type a [`Fill`]), the last occurrence of a key winning, unknown keys
/// skipped, and anything but an object read as the default. Every struct has a lifetime, the
/// frame's.
macro_rules! lenient_struct {
    (
        $(#[$meta:meta])*
        struct $name:ident<$lt:lifetime> {
            $( $(#[$fmeta:meta])* $field:ident : $ty:ty = $key:literal ),* $(,)?
        }
    ) => {
        $(#[$meta])*
        #[derive(Default)]
        struct $name<$lt> {
            $( $(#[$fmeta])* $field: $ty, )*
            _frame: ::std::marker::PhantomData<&$lt str>,
        }

        impl<'de: $lt, $lt> $crate::framing::lenient::Fill<'de> for $name<$lt> {
            fn fill<D: ::serde::Deserializer<'de>>(
                d: D,
                into: &mut Self,
            ) -> Result<(), D::Error> {
                struct V<'o, $lt>(&'o mut $name<$lt>);

                impl<'de: $lt, $lt> ::serde::de::Visitor<'de> for V<'_, $lt> {
                    type Value = ();

                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str("any JSON value")
                    }
                    fn visit_map<M: ::serde::de::MapAccess<'de>>(
                        self,
                        mut map: M,
                    ) -> Result<(), M::Error> {
                        #[allow(non_camel_case_types, dead_code)]
                        #[derive(Default)]
                        struct Seen {
                            $( $field: bool, )*
                        }
                        let mut seen = Seen::default();
                        while let Some(key) =
                            map.next_key::<$crate::framing::lenient::Key<'de>>()?
                        {
                            match &*key.0 {
                                $( $key => {
                                    // A key given again: its last value is the one read.
                                    if ::std::mem::replace(&mut seen.$field, true) {
                                        self.0.$field = Default::default();
                                    }
                                    map.next_value_seed(
                                        $crate::framing::lenient::Seed(&mut self.0.$field),
                                    )?;
                                } )*
                                _ => {
                                    map.next_value::<::serde::de::IgnoredAny>()?;
                                }
                            }
                        }
                        Ok(())
                    }
                    fn visit_seq<A: ::serde::de::SeqAccess<'de>>(
                        self,
                        seq: A,
                    ) -> Result<(), A::Error> {
                        $crate::framing::lenient::skip_seq(seq)
                    }
                    $crate::framing::lenient::skip_scalars!();
                }

                d.deserialize_any(V(into))
            }

            fn fill_quick(
                r: &mut $crate::framing::lenient::Reader<'de>,
                into: &mut Self,
            ) -> $crate::framing::lenient::Quick {
                #[allow(non_camel_case_types, dead_code)]
                #[derive(Default)]
                struct Seen {
                    $( $field: bool, )*
                }
                let mut seen = Seen::default();
                r.object(|r, key| match key {
                    $( $key => {
                        // A key given again: its last value is the one read.
                        if ::std::mem::replace(&mut seen.$field, true) {
                            into.$field = Default::default();
                        }
                        $crate::framing::lenient::Fill::fill_quick(r, &mut into.$field)
                    } )*
                    _ => r.skip(),
                })
            }
        }
    };
}

pub(crate) use lenient_struct;

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    lenient_struct! {
        struct Event<'a> {
            kind: Str<'a> = "type",
            index: U64 = "index",
            done: Bool = "done",
            delta: Delta<'a> = "delta",
            usage: Raw<'a> = "usage",
        }
    }

    lenient_struct! {
        struct Delta<'a> {
            text: Str<'a> = "text",
        }
    }

    /// The type, index, done flag, delta text and usage of an event.
    type Fields = (
        Option<String>,
        Option<u64>,
        Option<bool>,
        Option<String>,
        Option<String>,
    );

    /// The fields as the same reads of a `Value` find them.
    fn by_value(json: &str) -> Fields {
        let v: Value = serde_json::from_str(json).unwrap();
        (
            v.get("type").and_then(Value::as_str).map(str::to_owned),
            v.get("index").and_then(Value::as_u64),
            v.get("done").and_then(Value::as_bool),
            v.get("delta")
                .and_then(|d| d.get("text"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            v.get("usage").map(Value::to_string),
        )
    }

    fn by_struct(json: &str) -> Fields {
        let mut e = Event::default();
        parse_into(json, &mut e).unwrap();
        (
            e.kind.get().map(str::to_owned),
            e.index.0,
            e.done.0,
            e.delta.text.get().map(str::to_owned),
            e.usage
                .0
                .map(|r| serde_json::from_str::<Value>(r.get()).unwrap().to_string()),
        )
    }

    #[test]
    fn fields_read_as_a_value_reads_them() {
        for json in [
            r#"{"type":"delta","index":3,"done":true,"delta":{"text":"hé"},"usage":{"a":1}}"#,
            r#"{"type":"d\u00e9lta","index":-1,"done":"yes","delta":{"text":"a\nb"}}"#,
            r#"{"type":7,"index":1.0,"done":null,"delta":"text","usage":null}"#,
            r#"{"type":["x"],"index":{"a":1},"done":[true],"delta":[{"text":"x"}],"usage":[1]}"#,
            r#"{"type":"a","type":"b","index":1,"index":null,"delta":{"text":"x"},"delta":{}}"#,
            r#"{"t\u0079pe":"escaped key","extra":{"deep":[1,{"x":[null]}]},"index":18446744073709551615}"#,
            r#"{"index":18446744073709551616,"delta":{"text":{"nested":"no"}}}"#,
            r#"{}"#,
            r#"[1,2,{"type":"x"}]"#,
            r#""text""#,
            r#"12"#,
            r#"null"#,
            r#"true"#,
        ] {
            assert_eq!(by_struct(json), by_value(json), "{json}");
        }
    }

    #[test]
    fn json_that_is_not_json_is_refused_as_a_value_refuses_it() {
        for json in [
            r#"{"type":"a""#,
            r#"{"type":"a",}"#,
            r#"{"delta":{"text":"\ud800"}}"#,
            r#"{"type":"a"} trailing"#,
            "",
        ] {
            assert!(serde_json::from_str::<Value>(json).is_err(), "{json}");
            assert!(parse_into(json, &mut Event::default()).is_err(), "{json}");
        }
    }

    lenient_struct! {
        struct Lists<'a> {
            first: First<Delta<'a>> = "first",
            all: List<Delta<'a>> = "all",
        }
    }

    #[test]
    fn lists_read_as_a_value_reads_them() {
        let text = |d: &Value| d.get("text").and_then(Value::as_str).map(str::to_owned);
        for json in [
            r#"{"first":[{"text":"a"},{"text":"b"}],"all":[{"text":"a"},7,{"text":"c\"d"}]}"#,
            r#"{"first":[],"all":[]}"#,
            r#"{"first":[5],"all":{"text":"x"}}"#,
            r#"{"first":{"text":"x"},"all":"x"}"#,
            r#"{"first":[[{"text":"x"}]],"all":null}"#,
            r#"{"first":[{"text":"x"}],"first":[{"text":"y"}],"all":[{}],"all":[{"text":"z"}]}"#,
            r#"{}"#,
        ] {
            let v: Value = serde_json::from_str(json).unwrap();
            let mut l = Lists::default();
            parse_into(json, &mut l).unwrap();
            assert_eq!(
                l.first.0.as_ref().map(|d| d.text.get().map(str::to_owned)),
                v.get("first").and_then(|f| f.get(0)).map(text),
                "{json}"
            );
            let all: Vec<_> = l
                .all
                .0
                .iter()
                .map(|d| d.text.get().map(str::to_owned))
                .collect();
            let by_value: Vec<_> = v
                .get("all")
                .and_then(Value::as_array)
                .map(|a| a.iter().map(text).collect())
                .unwrap_or_default();
            assert_eq!(all, by_value, "{json}");
        }
    }

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let json = r#"{"type":"plain","delta":{"text":"esc\"aped"}}"#;
        let mut e = Event::default();
        parse_into(json, &mut e).unwrap();
        assert!(matches!(e.kind.0, Some(Cow::Borrowed("plain"))));
        assert!(matches!(e.delta.text.0, Some(Cow::Owned(_))));
    }

    lenient_struct! {
        struct Every<'a> {
            event: Event<'a> = "e",
            lists: Lists<'a> = "l",
            present: Present<Delta<'a>> = "p",
            raw: Raw<'a> = "r",
            object: Object<Delta<'a>> = "o",
            with_text: WithText<'a, Delta<'a>> = "w",
        }
    }

    /// Everything `Every` read, or the error.
    fn every(json: &str, quick: bool) -> Result<String, String> {
        let mut e = Every::default();
        if quick {
            read_quick(json, &mut e).map_err(|_| "bailed".to_owned())?;
        } else {
            read_with_serde(json, &mut e).map_err(|e| e.to_string())?;
        }
        let text = |d: &Delta<'_>| d.text.0.as_deref().map(str::to_owned);
        Ok(format!(
            "{:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?} {:?}",
            (e.event.kind.0, e.event.index.0, e.event.done.0),
            text(&e.event.delta),
            e.event.usage.0.map(|r| r.get()),
            e.lists.first.0.as_ref().map(text),
            e.lists.all.0.iter().map(text).collect::<Vec<_>>(),
            e.present.0.as_ref().map(text),
            e.raw.0.map(|r| r.get()),
            e.raw.value(),
            e.object.0.as_ref().map(text),
            (e.with_text.text.map(|r| r.get()), text(&e.with_text.value)),
            serde_json::from_str::<Value>(json).ok(),
        ))
    }

    /// JSON as streams send it, and JSON that is odd or broken in the ways the quick path
    /// must leave to `serde_json`.
    const SAMPLES: &[&str] = &[
        r#"{"e":{"type":"delta","index":3,"done":true,"delta":{"text":"hé"},"usage":{"a":[1,2.5e-3,-0,true,null]}},"r":7}"#,
        r#" { "e" : { "type" : "d\u00e9\n\"\\\/\b\f\r\t" , "index" : 0 } , "p" : { "text" : "x" } } "#,
        r#"{"l":{"first":[{"text":"a"},{"text":"b"}],"all":[{"text":"a"},7,{"text":"c\"d"}]},"r":"s"}"#,
        r#"{"l":{"first":[],"all":[]},"p":null,"r":null,"e":{"delta":[{"text":"x"}],"index":18446744073709551615}}"#,
        r#"{"e":{"index":9999999999999999999,"done":false},"r":{"k":{"k":[[[]]],"n":-12.5E+7}}}"#,
        r#"{"e":{"index":1.0,"type":7,"done":"yes","delta":"text"},"p":[{"text":"x"}],"l":{"first":{"text":"x"},"all":"x"}}"#,
        r#"{"e":{"type":"a","type":"b","index":1,"index":null,"delta":{"text":"x"},"delta":{}},"p":{"text":"y"},"p":{}}"#,
        r#"{"e":{"t\u0079pe":"escaped key","x\ud83d\ude00":1,"index":01},"r":"\ud83d\ude00"}"#,
        r#"{"e":{"type":"\ud800"},"r":1e400,"p":{"text":1e400}}"#,
        r#"{"e":{"index":-1,"type":"\uDC00x"},"l":{"all":[-0,0.5,1E5]}}"#,
        r#"[1,2,{"e":"x"}]"#,
        r#""text""#,
        "12",
        "null",
        "true",
        "{}",
        "{\"e\":{\"type\":\"tab\tin\"}}",
        r#"{"o":{"text":"a"},"w":{"text":"b","x":[1,{"y":null}]},"o":{"text":"c\n"}}"#,
        r#"{"o":[{"text":"a"}],"w":7,"o":null,"w":[{"text":"x"}]}"#,
        r#"{"w":{"text":"\u00e9","text":"d"},"o":"s","o":{"x":1e400}}"#,
    ];

    /// Bytes that change what a sample means, put in place of each of its bytes.
    const MUTATIONS: &[u8] = b"{}[],:\"\\ 0123456789-+.eEunltrfabx\t\n\x01";

    /// Whatever the quick path reads, `serde_json` reads the same: for each sample, each of its
    /// prefixes and each one-byte change of it, the quick path either bails or agrees.
    #[test]
    fn the_quick_path_reads_what_serde_json_reads_or_bails() {
        let mut read_quick = 0;
        let mut check = |json: &str| {
            if let Ok(quick) = every(json, true) {
                read_quick += 1;
                assert_eq!(Ok(quick), every(json, false), "{json}");
            }
        };
        for sample in SAMPLES {
            check(sample);
            let bytes = sample.as_bytes();
            for cut in 0..bytes.len() {
                if let Ok(prefix) = std::str::from_utf8(&bytes[..cut]) {
                    check(prefix);
                }
                for &m in MUTATIONS {
                    let mut changed = bytes.to_vec();
                    changed[cut] = m;
                    if let Ok(changed) = std::str::from_utf8(&changed) {
                        check(changed);
                    }
                }
            }
        }
        // (Many of the changes are JSON the quick path reads.)
        assert!(read_quick > 1000, "{read_quick}");
    }

    /// The events of streams are read on the quick path; what it leaves to `serde_json` is
    /// read there.
    #[test]
    fn stream_events_are_read_on_the_quick_path() {
        for json in [
            SAMPLES[0], SAMPLES[1], SAMPLES[2], SAMPLES[6], "{}", " null ",
        ] {
            assert!(every(json, true).is_ok(), "{json}");
        }
        // (A count of 20 digits, a surrogate, a number that is no count where a field is read,
        // a leading zero, trailing characters, nothing.)
        for json in [
            SAMPLES[3],
            SAMPLES[7],
            SAMPLES[8],
            SAMPLES[9],
            "{\"e\":{\"index\":01}}",
            "{\"e\":1} x",
            "",
        ] {
            assert!(every(json, true).is_err(), "{json}");
            let mut e = Every::default();
            assert_eq!(
                parse_into(json, &mut e).map_err(|e| e.to_string()),
                read_with_serde(json, &mut Every::default()).map_err(|e| e.to_string()),
                "{json}"
            );
        }
    }

    /// Nesting past the quick path's depth is left to `serde_json`, which reads it or refuses
    /// it past its own limit.
    #[test]
    fn deep_nesting_is_left_to_serde_json() {
        for depth in [10, 63, 64, 65, 127, 128, 129, 1000] {
            for key in ["r", "e"] {
                let json = format!("{{\"{key}\":{}{}}}", "[".repeat(depth), "]".repeat(depth));
                assert_eq!(every(&json, true).is_ok(), depth < 64, "{key} {depth}");
                assert_eq!(
                    parse_into(&json, &mut Every::default()).map_err(|e| e.to_string()),
                    read_with_serde(&json, &mut Every::default()).map_err(|e| e.to_string()),
                    "{key} {depth}"
                );
            }
        }
    }
}
