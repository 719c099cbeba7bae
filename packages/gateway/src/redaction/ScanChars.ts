/**
 * The character classes and character codes the built-in detectors read text
 * by (`Scanner.ts`).
 *
 * **Rules**
 *
 * - Classes are bits over ASCII only: a character at or above 128 has none,
 *   so no detector matches or joins a run across non-ASCII text, with two
 *   exceptions that only the digit detectors read: full-width digits
 *   (U+FF10–U+FF19) are digits, and the invisible characters (zero-width
 *   space, non-joiner and joiner, word joiner, byte order mark, soft hyphen)
 *   join the digits on either side of them.
 *
 * @since 0.1.0
 */

// Character classes of ASCII characters; anything at or above 128 has none.
export const WORD = 1 // [A-Za-z0-9_]
export const DIGIT = 2
export const UPPER = 4
export const LOWER = 8
export const B64URL = 16 // [A-Za-z0-9_-]
export const DOMAIN = 32 // [A-Za-z0-9.-]
export const LOCAL = 64 // [A-Za-z0-9._%+-]
export const PEM_BODY = 128 // base64, whitespace, and what header lines such as "DEK-Info: AES-128-CBC,..." contain
export const LABEL = 256 // [A-Z0-9 ], the words of a PEM label
export const ALNUM_DASH = 512 // [A-Za-z0-9-]
export const TOKEN68 = 1024 // [A-Za-z0-9._~+/-], an HTTP auth credential (RFC 9110 token68, without its trailing "=")
export const VALUE_STOP = 2048 // what ends an unquoted credential value: quotes and the delimiters of URLs, JSON, markup
export const BASE64 = 4096 // [A-Za-z0-9+/], the standard base64 alphabet (HTTP Basic credentials)

const CLASS = new Uint16Array(128)
const addClass = (chars: string, bits: number): void => {
  for (let i = 0; i < chars.length; i++) CLASS[chars.charCodeAt(i)]! |= bits
}
const UPPERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
const LOWERS = "abcdefghijklmnopqrstuvwxyz"
const DIGITS = "0123456789"
const ALNUM = UPPERS + LOWERS + DIGITS
addClass(ALNUM + "_", WORD)
addClass(DIGITS, DIGIT)
addClass(UPPERS, UPPER)
addClass(LOWERS, LOWER)
addClass(ALNUM + "_-", B64URL)
addClass(ALNUM + ".-", DOMAIN)
addClass(ALNUM + "._%+-", LOCAL)
addClass(ALNUM + "+/=:,- \t\r\n", PEM_BODY)
addClass(UPPERS + DIGITS + " ", LABEL)
addClass(ALNUM + "-", ALNUM_DASH)
addClass(ALNUM + "._~+/-", TOKEN68)
addClass("\"'`&,;<>()[]{}|", VALUE_STOP)
addClass(ALNUM + "+/", BASE64)

export const SPACE = 32
export const PEM_BEGIN = "-----BEGIN "
export const DASH = 45
export const DOT = 46
export const AT = 64
export const EQUALS = 61
export const COLON = 58
export const TAB = 9
export const QUOTE = 34
export const APOSTROPHE = 39
export const BACKSLASH = 92

export const classOf = (c: number): number => (c < 128 ? CLASS[c]! : 0)
export const isDigit = (c: number): boolean => c >= 48 && c <= 57

/** The first full-width digit, U+FF10 (０); the ten run to U+FF19 (９). */
export const WIDE_ZERO = 0xff10

/** True for a full-width digit (U+FF10–U+FF19). */
export const isWideDigit = (c: number): boolean => c >= WIDE_ZERO && c <= WIDE_ZERO + 9

/** True for an ASCII or a full-width digit. */
export const isAnyDigit = (c: number): boolean => (c >= 48 && c <= 57) || (c >= WIDE_ZERO && c <= WIDE_ZERO + 9)

/** The value of an ASCII or full-width digit, or -1 for any other character. */
export const digitValue = (c: number): number =>
  c >= 48 && c <= 57 ? c - 48 : c >= WIDE_ZERO && c <= WIDE_ZERO + 9 ? c - WIDE_ZERO : -1

/**
 * True for a character that shows nothing and can be slipped between the
 * digits of a number: U+200B–U+200D (zero-width space, non-joiner, joiner),
 * U+2060 (word joiner), U+FEFF (byte order mark) and U+00AD (soft hyphen).
 */
export const isInvisible = (c: number): boolean =>
  c === 0xad || (c >= 0x200b && c <= 0x200d) || c === 0x2060 || c === 0xfeff
