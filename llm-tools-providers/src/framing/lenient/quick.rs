//! The quick path of the lenient reading: a frame's JSON read straight into its lenient struct,
//! without serde's visitors, for the JSON that streams send (plain strings and simple escapes,
//! counts, objects and arrays a few levels deep).
//!
//! It reads a part of JSON only, and reads it as `serde_json` reads it: what it accepts,
//! `serde_json` accepts and reads to the same fields. Anything else (an error, a number that is
//! not a count where a field is read, a `\u` escape of a surrogate, nesting past
//! [`MAX_DEPTH`]) is a [`Bail`], and the frame is read again by `serde_json` from its start,
//! which accepts or refuses it with its own error: the quick path never refuses a frame.
//!
//! - A value read as a field (`deserialize_any`): a string, `true`, `false`, `null`, a count (a
//!   non-negative integer of at most 19 digits, no fraction or exponent), or an object or
//!   array read through; any other number bails (`serde_json` reads it as an `f64`, which may
//!   be out of range, an error).
//! - A value skipped (an unknown key's, `IgnoredAny`, a [`Raw`](super::Raw) value): any JSON
//!   number, as `serde_json` checks a number it skips (its grammar only).
//! - Strings: control characters bail (`serde_json` refuses them), as do `\u` escapes of
//!   surrogates (paired or not); the other escapes are decoded, and a string without any is
//!   borrowed from the frame.

use std::borrow::Cow;

/// What a JSON value is, for a field that wants a string, a count or a flag; the contents of
/// arrays and objects are skipped.
pub(crate) enum Scalar<'a> {
    Str(Cow<'a, str>),
    Bool(bool),
    /// A non-negative integer (what `Value::as_u64` reads).
    U64(u64),
    /// Anything else: `null`, a negative or fractional number, an array, an object.
    Other,
}

/// The quick path does not read this frame: `serde_json` reads it.
#[derive(Debug)]
pub(crate) struct Bail;

/// What the quick path reads, or [`Bail`].
pub(crate) type Quick<T = ()> = Result<T, Bail>;

/// The deepest nesting of objects and arrays the quick path reads (`serde_json` refuses 128
/// levels of the ones it reads as values; past this, it decides).
const MAX_DEPTH: u32 = 64;

/// A frame's JSON, read from its start.
pub(crate) struct Reader<'de> {
    text: &'de str,
    at: usize,
    depth: u32,
}

impl<'de> Reader<'de> {
    pub(crate) fn new(text: &'de str) -> Self {
        Self {
            text,
            at: 0,
            depth: 0,
        }
    }

    /// After the value: nothing but whitespace is left (`Deserializer::end`).
    pub(crate) fn end(mut self) -> Quick {
        match self.peek() {
            Err(Bail) => Ok(()),
            Ok(_) => Err(Bail),
        }
    }

    /// The next byte that is not whitespace (as `serde_json` skips it), not taken.
    pub(crate) fn peek(&mut self) -> Quick<u8> {
        let bytes = self.text.as_bytes();
        while let Some(&b) = bytes.get(self.at) {
            match b {
                b' ' | b'\n' | b'\t' | b'\r' => self.at += 1,
                _ => return Ok(b),
            }
        }
        Err(Bail)
    }

    /// Takes `want`, the next byte after whitespace.
    fn take(&mut self, want: u8) -> Quick {
        if self.peek()? == want {
            self.at += 1;
            Ok(())
        } else {
            Err(Bail)
        }
    }

    /// Takes `word` (`true`, `false`, `null`), at the next byte.
    fn word(&mut self, word: &[u8]) -> Quick {
        match self.text.as_bytes().get(self.at..) {
            Some(rest) if rest.starts_with(word) => {
                self.at += word.len();
                Ok(())
            }
            _ => Err(Bail),
        }
    }

    /// Takes an object's `{` or an array's `[` (the next byte): one level deeper.
    fn open(&mut self) -> Quick {
        if self.depth >= MAX_DEPTH {
            return Err(Bail);
        }
        self.depth += 1;
        self.at += 1;
        Ok(())
    }

    /// Reads the entries of the object whose `{` is next: each key, then `entry` reads its
    /// value.
    fn entries(&mut self, mut entry: impl FnMut(&mut Self, &str) -> Quick) -> Quick {
        self.open()?;
        if self.peek()? == b'}' {
            self.at += 1;
            self.depth -= 1;
            return Ok(());
        }
        loop {
            self.take(b'"')?;
            let key = self.string()?;
            self.take(b':')?;
            entry(self, &key)?;
            match self.peek()? {
                b',' => self.at += 1,
                b'}' => {
                    self.at += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return Err(Bail),
            }
        }
    }

    /// Reads the elements of the array whose `[` is next, `element` each with its place.
    fn elements(&mut self, mut element: impl FnMut(&mut Self, usize) -> Quick) -> Quick {
        self.open()?;
        if self.peek()? == b']' {
            self.at += 1;
            self.depth -= 1;
            return Ok(());
        }
        let mut i = 0;
        loop {
            element(self, i)?;
            i += 1;
            match self.peek()? {
                b',' => self.at += 1,
                b']' => {
                    self.at += 1;
                    self.depth -= 1;
                    return Ok(());
                }
                _ => return Err(Bail),
            }
        }
    }

    /// Reads an object entry by entry (a lenient struct); anything else is read through as a
    /// field's value is.
    pub(crate) fn object(&mut self, entry: impl FnMut(&mut Self, &str) -> Quick) -> Quick {
        match self.peek()? {
            b'{' => self.entries(entry),
            _ => self.scalar().map(drop),
        }
    }

    /// Reads an array element by element, `element` each with its place; anything else is
    /// read through as a field's value is.
    pub(crate) fn array(&mut self, element: impl FnMut(&mut Self, usize) -> Quick) -> Quick {
        match self.peek()? {
            b'[' => self.elements(element),
            _ => self.scalar().map(drop),
        }
    }

    /// Reads a field's value (`deserialize_any`): a string, a count, a flag, or anything else
    /// read through.
    pub(crate) fn scalar(&mut self) -> Quick<Scalar<'de>> {
        match self.peek()? {
            b'"' => {
                self.at += 1;
                self.string().map(Scalar::Str)
            }
            b'0'..=b'9' => self.count().map(Scalar::U64),
            b't' => self.word(b"true").map(|()| Scalar::Bool(true)),
            b'f' => self.word(b"false").map(|()| Scalar::Bool(false)),
            b'n' => self.word(b"null").map(|()| Scalar::Other),
            b'{' | b'[' => self.skip().map(|()| Scalar::Other),
            _ => Err(Bail),
        }
    }

    /// Skips a value (`IgnoredAny`), checking it is JSON.
    pub(crate) fn skip(&mut self) -> Quick {
        match self.peek()? {
            b'{' => self.entries(|r, _| r.skip()),
            b'[' => self.elements(|r, _| r.skip()),
            b'"' => {
                self.at += 1;
                self.skip_string()
            }
            b'-' | b'0'..=b'9' => self.skip_number(),
            b't' => self.word(b"true"),
            b'f' => self.word(b"false"),
            b'n' => self.word(b"null"),
            _ => Err(Bail),
        }
    }

    /// Skips a value and gives its text (a `RawValue`'s: from its first byte to its last).
    pub(crate) fn raw(&mut self) -> Quick<&'de str> {
        self.peek()?;
        let start = self.at;
        self.skip()?;
        self.text.get(start..self.at).ok_or(Bail)
    }

    /// Reads a value with `read` and gives its text (from its first byte to its last).
    pub(crate) fn text_of(&mut self, read: impl FnOnce(&mut Self) -> Quick) -> Quick<&'de str> {
        self.peek()?;
        let start = self.at;
        read(self)?;
        self.text.get(start..self.at).ok_or(Bail)
    }

    /// A count: `0`, or a digit other than `0` then at most 18 more, with no fraction or
    /// exponent after it (what `serde_json` reads as a `u64` whatever the digits).
    fn count(&mut self) -> Quick<u64> {
        let bytes = self.text.as_bytes();
        let start = self.at;
        let mut n: u64 = 0;
        while let Some(&b) = bytes.get(self.at) {
            if !b.is_ascii_digit() {
                break;
            }
            if self.at - start == 19 {
                return Err(Bail);
            }
            n = n * 10 + u64::from(b - b'0');
            self.at += 1;
        }
        let digits = self.at - start;
        let leading_zero = digits > 1 && bytes.get(start) == Some(&b'0');
        match bytes.get(self.at) {
            _ if leading_zero => Err(Bail),
            Some(b'.' | b'e' | b'E') => Err(Bail),
            _ => Ok(n),
        }
    }

    /// Skips a number, checking its grammar as `serde_json` checks a number it skips.
    fn skip_number(&mut self) -> Quick {
        let bytes = self.text.as_bytes();
        if bytes.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        match bytes.get(self.at) {
            Some(b'0') => {
                self.at += 1;
                if bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
                    return Err(Bail);
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            _ => return Err(Bail),
        }
        if bytes.get(self.at) == Some(&b'.') {
            self.at += 1;
            if !bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
                return Err(Bail);
            }
            self.digits();
        }
        if let Some(b'e' | b'E') = bytes.get(self.at) {
            self.at += 1;
            if let Some(b'+' | b'-') = bytes.get(self.at) {
                self.at += 1;
            }
            if !bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
                return Err(Bail);
            }
            self.digits();
        }
        Ok(())
    }

    /// Takes the digits that come next.
    fn digits(&mut self) {
        let bytes = self.text.as_bytes();
        while bytes.get(self.at).is_some_and(u8::is_ascii_digit) {
            self.at += 1;
        }
    }

    /// The string whose opening quote was taken, to its closing quote: borrowed when it has no
    /// escapes.
    fn string(&mut self) -> Quick<Cow<'de, str>> {
        let text = self.text;
        let bytes = text.as_bytes();
        let start = self.at;
        let end = plain_run(bytes, start);
        if bytes.get(end) == Some(&b'"') {
            self.at = end + 1;
            return text.get(start..end).map(Cow::Borrowed).ok_or(Bail);
        }
        let mut owned = String::new();
        let mut run = start;
        loop {
            let end = plain_run(bytes, run);
            owned.push_str(text.get(run..end).ok_or(Bail)?);
            match bytes.get(end) {
                Some(b'"') => {
                    self.at = end + 1;
                    return Ok(Cow::Owned(owned));
                }
                Some(b'\\') => {
                    let (c, next) = escape(bytes, end + 1)?;
                    owned.push(c);
                    run = next;
                }
                _ => return Err(Bail),
            }
        }
    }

    /// Skips the string whose opening quote was taken, checking it as [`string`](Self::string)
    /// reads it.
    fn skip_string(&mut self) -> Quick {
        let bytes = self.text.as_bytes();
        let mut run = self.at;
        loop {
            let end = plain_run(bytes, run);
            match bytes.get(end) {
                Some(b'"') => {
                    self.at = end + 1;
                    return Ok(());
                }
                Some(b'\\') => run = escape(bytes, end + 1)?.1,
                _ => return Err(Bail),
            }
        }
    }
}

/// Where the run of a string's bytes that need no care, from `from`, ends: at a quote, a
/// backslash, a control character, or the end of the bytes. (Eight bytes at a time, as
/// `serde_json` looks: a byte's high bit marks a byte of the three kinds, and the lowest one
/// marked is always one.)
fn plain_run(bytes: &[u8], from: usize) -> usize {
    const ONES: u64 = u64::from_le_bytes([1; 8]);
    const HIGH: u64 = ONES << 7;
    let mut at = from;
    while let Some(chunk) = bytes.get(at..).and_then(<[u8]>::first_chunk::<8>) {
        let w = u64::from_le_bytes(*chunk);
        let control = w.wrapping_sub(ONES * 0x20) & !w;
        let q = w ^ (ONES * u64::from(b'"'));
        let quote = q.wrapping_sub(ONES) & !q;
        let b = w ^ (ONES * u64::from(b'\\'));
        let backslash = b.wrapping_sub(ONES) & !b;
        let marked = (control | quote | backslash) & HIGH;
        if marked != 0 {
            return at + (marked.trailing_zeros() / 8) as usize;
        }
        at += 8;
    }
    while let Some(&b) = bytes.get(at) {
        if b == b'"' || b == b'\\' || b < 0x20 {
            break;
        }
        at += 1;
    }
    at
}

/// The character of the escape whose letter is at `at` (after its backslash), and where the
/// string goes on. A `\u` escape of a surrogate bails.
fn escape(bytes: &[u8], at: usize) -> Quick<(char, usize)> {
    let c = match bytes.get(at) {
        Some(b'"') => '"',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => {
            let hex = bytes.get(at + 1..at + 5).ok_or(Bail)?;
            let mut n: u32 = 0;
            for &h in hex {
                let digit = char::from(h).to_digit(16).ok_or(Bail)?;
                n = n * 16 + digit;
            }
            // (`char::from_u32` refuses the surrogates, which `serde_json` pairs or refuses.)
            return Ok((char::from_u32(n).ok_or(Bail)?, at + 5));
        }
        _ => return Err(Bail),
    };
    Ok((c, at + 1))
}
