//! The one way a header is declared: its layout as data, its accessors generated from it.
//!
//! [`header!`](header) turns a table of fields into an `XPacket` type in the style of smoltcp's
//! `wire` module and a `layout` module of [`FieldSpec`](crate::field::FieldSpec) constants.
//! A header module then holds only what is its own: the diagram, the field table, the
//! variable-length parts, and the `XRepr` with the rules of its specification.
//! [`numbered!`](numbered) declares the registries of protocol numbers (`Unknown(n)` for the rest).
//!
//! ```text
//! header! {
//!     /// doc of the packet type
//!     pub struct XPacket in layout, pub flags {      // `, pub flags` only if a field has bits
//!         /// doc of the getter
//!         VNI @ 4..7 => vni / set_vni: u32;          // bytes 4-6, getter and setter
//!         /// doc of the getter
//!         FLAGS @ 0..1 => flags: u8 {                // a field with named bits
//!             /// doc of the constant and the getter
//!             I = 0x08 => vni_valid: bool;           // flags::I, layout::I, vni_valid()
//!             UNUSED = 0xf0;                         // flags::UNUSED and layout::UNUSED only
//!         }
//!         RESERVED @ 7..8;                            // described, no accessor
//!         PCP @ 6..8 & TCI_PCP => pcp: u8;            // part of a field, no public constant
//!     }
//!     /// doc of check_len
//!     check_len("x header", HEADER_LEN);   // see below for variable-length headers
//!     /// doc of payload()
//!     payload(at HEADER_LEN);              // or (after header_len): a method gives the start
//!     /// doc of the method
//!     fn clear_reserved() zeroes RESERVED;  // optional: a setter of fields senders zero
//!     flags { pub const MORE: u8 = 1; }     // optional: constants for bits outside the table
//! }
//! ```
//!
//! A bit is declared once, inside the field that holds it: the macro makes it a constant of the
//! field's type in the flags module (the public masks users combine), a `FieldSpec` in `layout`
//! with the field's bytes, and its accessors. A bit's value may name the bits before it
//! (`MUST_BE_ZERO = R | STRICT_SOURCE_ROUTE | 0x0400`). A field with bits but no accessor still
//! gives their type: `VERSION_OPT_LEN @ 0..1: u8 { ... }`.
//!
//! `check_len` proves the buffer holds `HEADER_LEN` bytes. A variable-length header adds
//! `check_len("x header", HEADER_LEN, more_checks; "x options", header_len)`: then it calls
//! `more_checks(&self, len)` (either part may be left out) and proves the buffer holds
//! `header_len()` bytes, or fails naming "x options". Every declared field must end within
//! `HEADER_LEN`, which the build checks.

/// Declares a header's `XPacket` type, its `layout` module and its flags module; see the module
/// documentation.
macro_rules! header {
    (@get $layout:ident, [$(#[$doc:meta])*] $NAME:ident [$get:ident] [$ty:ty]) => {
        $(#[$doc])*
        #[inline]
        pub fn $get(&self) -> $ty {
            let bits = $layout::$NAME.read(self.buffer.as_ref());
            <$ty as $crate::field::FieldValue>::from_bits(bits)
        }
    };
    (@get $layout:ident, [$($doc:tt)*] $NAME:ident [] [$($ty:ty)?]) => {};
    (@set $layout:ident, $NAME:ident [$get:ident / $set:ident] [$ty:ty]) => {
        #[doc = concat!("Sets [`Self::", stringify!($get), "`]; no other bit changes.")]
        #[inline]
        pub fn $set(&mut self, value: $ty) {
            let bits = $crate::field::FieldValue::into_bits(value);
            $layout::$NAME.write(self.buffer.as_mut(), bits);
        }
    };
    (@set $layout:ident, $NAME:ident [$($get:ident)?] [$($ty:ty)?]) => {};
    (@bits [$ty:ty] $([$(#[$doc:meta])*] $BIT:ident = $bits:expr;)*) => {
        $($(#[$doc])* pub const $BIT: $ty = $bits;)*
    };
    (@bits []) => {};
    (@start $self:ident, at $start:expr) => {
        $start
    };
    (@start $self:ident, after $method:ident) => {
        $self.$method()
    };
    (
        $(#[$meta:meta])*
        pub struct $Packet:ident in $layout:ident, $flags_vis:vis $flags:ident {$(
            $(#[$doc:meta])*
            $NAME:ident @ $from:literal..$to:literal $(& $mask:tt)?
                $(=> $get:ident $(/ $set:ident)?)? $(: $ty:ty)?
                $({$(
                    $(#[$bit_doc:meta])*
                    $BIT:ident = $bits:expr $(=> $bit_get:ident $(/ $bit_set:ident)? : $bit_ty:ty)?;
                )*})?
            $(;)?
        )*}
        $(#[$check_doc:meta])*
        check_len($what:literal, $len:expr $(, $more:ident)? $(; $whole:literal, $end:ident)?);
        $(#[$payload_doc:meta])*
        payload($($start:tt)+);
        $($(#[$clear_doc:meta])* fn $clear:ident() zeroes $($ZERO:ident),+;)?
        $(flags { $($extra:item)* })?
    ) => {
        /// Where each field of the header sits: constants for the accessors and for code
        /// generated outside Rust (see docs/design/wire-headers.md).
        pub mod $layout {
            #[allow(unused_imports)]
            use super::*;
            use $crate::field::FieldSpec;
            /// Bytes `check_len` requires before any accessor reads.
            pub const MIN_LEN: usize = $len;
            $(
                #[allow(missing_docs)]
                pub const $NAME: FieldSpec =
                    FieldSpec::new(stringify!($NAME), $from, $to, u64::MAX $(& ($mask) as u64)?);
                $($(
                    #[allow(missing_docs)]
                    pub const $BIT: FieldSpec =
                        FieldSpec::new(stringify!($BIT), $from, $to, super::$flags::$BIT as u64);
                )*)?
            )*
            /// Every field above, in the order declared (a field, then its bits).
            pub const FIELDS: &[FieldSpec] = &[$($NAME, $($($BIT,)*)?)*];
            const _: () = {$(assert!($NAME.end() <= MIN_LEN, "field past MIN_LEN");)*};
        }

        /// The bits of the header's flag fields, as declared in its field table: each is also a
        /// `FieldSpec` in the layout module.
        $flags_vis mod $flags {
            $($crate::header::header!(@bits [$($ty)?] $($([$(#[$bit_doc])*] $BIT = $bits;)*)?);)*
            $($($extra)*)?
        }

        $(#[$meta])*
        #[derive(Debug, PartialEq, Eq, Clone)]
        pub struct $Packet<T: AsRef<[u8]>> {
            buffer: T,
        }

        impl<T: AsRef<[u8]>> $Packet<T> {
            /// Wraps a buffer without checking its length.
            pub const fn new_unchecked(buffer: T) -> Self {
                $Packet { buffer }
            }

            /// Wraps a buffer after checking it with [`Self::check_len`].
            pub fn new_checked(buffer: T) -> $crate::Result<Self> {
                let packet = Self::new_unchecked(buffer);
                packet.check_len()?;
                Ok(packet)
            }

            $(#[$check_doc])*
            pub fn check_len(&self) -> $crate::Result<()> {
                let len = self.buffer.as_ref().len();
                if len < $layout::MIN_LEN {
                    return Err($crate::Error::truncated($what, $layout::MIN_LEN, len));
                }
                $(self.$more(len)?;)?
                $(
                    let need = self.$end();
                    if len < need {
                        return Err($crate::Error::truncated($whole, need, len));
                    }
                )?
                Ok(())
            }

            /// Consumes the packet, returning the underlying buffer.
            pub fn into_inner(self) -> T {
                self.buffer
            }

            $(
                $crate::header::header!(@get $layout, [$(#[$doc])*] $NAME [$($get)?] [$($ty)?]);
                $($($crate::header::header!(
                    @get $layout, [$(#[$bit_doc])*] $BIT [$($bit_get)?] [$($bit_ty)?]
                );)*)?
            )*
        }

        impl<'a, T: AsRef<[u8]> + ?Sized> $Packet<&'a T> {
            $(#[$payload_doc])*
            #[inline]
            pub fn payload(&self) -> &'a [u8] {
                let start = $crate::header::header!(@start self, $($start)+);
                &self.buffer.as_ref()[start..]
            }
        }

        impl<T: AsRef<[u8]> + AsMut<[u8]>> $Packet<T> {
            $(
                $crate::header::header!(@set $layout, $NAME [$($get $(/ $set)?)?] [$($ty)?]);
                $($($crate::header::header!(
                    @set $layout, $BIT [$($bit_get $(/ $bit_set)?)?] [$($bit_ty)?]
                );)*)?
            )*

            $(
                $(#[$clear_doc])*
                pub fn $clear(&mut self) {
                    $($layout::$ZERO.write(self.buffer.as_mut(), 0);)+
                }
            )?

            /// The payload, mutable.
            #[inline]
            pub fn payload_mut(&mut self) -> &mut [u8] {
                let start = $crate::header::header!(@start self, $($start)+);
                &mut self.buffer.as_mut()[start..]
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub struct $Packet:ident in $layout:ident {$($fields:tt)*}
        $($rest:tt)*
    ) => {
        $crate::header::header! {
            $(#[$meta])*
            pub struct $Packet in $layout, no_flags {$($fields)*}
            $($rest)*
        }
    };
}
pub(crate) use header;

/// Declares a registry of protocol numbers as an enum, and after it the variant that holds every
/// number without a name of its own; with `From<u8>` both ways and
/// [`FieldValue`](crate::field::FieldValue) so that a `header!` field can read as it.
/// When every variant is followed by `=> "text"` and the last one by `=> "format"` (one
/// positional `{}` for the number), the enum also gets the `Display` those say.
macro_rules! numbered {
    (
        $(#[$meta:meta])*
        pub enum $Name:ident {
            $($(#[$doc:meta])* $Variant:ident = $n:literal => $text:literal,)*
        }
        $(#[$other_doc:meta])* $Other:ident(u8) => $other_text:literal;
    ) => {
        $crate::header::numbered! {
            $(#[$meta])*
            pub enum $Name {
                $($(#[$doc])* $Variant = $n,)*
            }
            $(#[$other_doc])* $Other(u8);
        }

        impl core::fmt::Display for $Name {
            fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                match self {
                    $($Name::$Variant => f.write_str($text),)*
                    $Name::$Other(n) => write!(f, $other_text, n),
                }
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub enum $Name:ident {
            $($(#[$doc:meta])* $Variant:ident = $n:literal,)*
        }
        $(#[$other_doc:meta])* $Other:ident(u8);
    ) => {
        $(#[$meta])*
        #[derive(Debug, PartialEq, Eq, Clone, Copy, Hash)]
        pub enum $Name {
            $($(#[$doc])* $Variant,)*
            $(#[$other_doc])* $Other(u8),
        }

        impl From<u8> for $Name {
            fn from(value: u8) -> Self {
                match value {
                    $($n => $Name::$Variant,)*
                    other => $Name::$Other(other),
                }
            }
        }

        impl From<$Name> for u8 {
            fn from(value: $Name) -> Self {
                match value {
                    $($Name::$Variant => $n,)*
                    $Name::$Other(other) => other,
                }
            }
        }

        impl $crate::field::FieldValue for $Name {
            #[inline]
            fn from_bits(bits: u64) -> Self {
                Self::from(bits as u8)
            }
            #[inline]
            fn into_bits(self) -> u64 {
                u8::from(self).into()
            }
        }
    };
}
pub(crate) use numbered;

/// Writes the name of every flag that is set, as the `Display` of a `XRepr` lists them after
/// its fields (each name with its leading space).
pub(crate) fn write_flags(
    f: &mut core::fmt::Formatter<'_>,
    flags: &[(bool, &str)],
) -> core::fmt::Result {
    flags
        .iter()
        .filter(|(set, _)| *set)
        .try_for_each(|(_, name)| f.write_str(name))
}
