/**
 * The redaction corpus: positives and negatives of every built-in detector,
 * each asserting the exact output and the counts by kind.
 */
import { assert, describe, it } from "@effect/vitest"
import { PaymentCard } from "../../src/redaction/index.ts"
import { CARDS, CREDENTIALS, engineOf, IBANS } from "./fixtures.ts"

const engine = engineOf()

/** [input, expected output, expected counts] */
type Case = readonly [input: string, output: string, counts: Record<string, number>]

const check = (cases: ReadonlyArray<Case>) => {
  for (const [input, output, counts] of cases) {
    const result = engine.redactText(input)
    assert.strictEqual(result.value, output, `redacting ${JSON.stringify(input)}`)
    assert.deepStrictEqual(result.counts, counts, `counts of ${JSON.stringify(input)}`)
    assert.strictEqual(result.total, Object.values(counts).reduce((a, b) => a + b, 0))
  }
}

const unchanged = (...inputs: ReadonlyArray<string>): ReadonlyArray<Case> => inputs.map((s) => [s, s, {}])

describe("payment cards", () => {
  it("redacts the test card number of every network, and knows its brand", () => {
    for (const [brand, number] of CARDS) {
      assert.strictEqual(PaymentCard.brandOf(number), brand, number)
      check([[number, "[REDACTED:card]", { card: 1 }]])
    }
  })

  it("redacts numbers written with spaces or dashes, and inside text", () => {
    check([
      ["4111 1111 1111 1111", "[REDACTED:card]", { card: 1 }],
      ["5555-5555-5555-4444", "[REDACTED:card]", { card: 1 }],
      ["3782 822463 10005", "[REDACTED:card]", { card: 1 }],
      ["Card: 4111111111111111, exp 12/27", "Card: [REDACTED:card], exp 12/27", { card: 1 }],
      ["paid with 4111111111111111.", "paid with [REDACTED:card].", { card: 1 }],
      ["4111 1111 1111 1111 2027", "[REDACTED:card] 2027", { card: 1 }],
      ["order 12 4111 1111 1111 1111", "order 12 [REDACTED:card]", { card: 1 }],
      ["4111111111111111, 5555555555554444", "[REDACTED:card], [REDACTED:card]", { card: 2 }],
      ["café 4111111111111111 naïve", "café [REDACTED:card] naïve", { card: 1 }],
      ["(378282246310005)", "([REDACTED:card])", { card: 1 }]
    ])
  })

  it("leaves Luhn-invalid numbers, unknown IIN ranges, wrong lengths and other digit runs alone", () => {
    check(unchanged(
      "4111111111111112", // Luhn-invalid
      "5555555555554445",
      "1234567812345670", // Luhn-valid, no network starts with 1
      "0000000000000000",
      "9900123456780008",
      "3782822463100003", // Luhn-valid, American Express prefix, but 16 digits
      "41111111111111110000", // 20 digits: not a card, nor is any part of it
      "id4111111111111111", // glued to a word
      "4111111111111111abc",
      "card_4111111111111111",
      "4111 1111-1111 1111", // mixed separators
      "41 11 11 11 11 11 11 11", // groups too short to be a card's
      "+1 415 555 2671",
      "3.14159265358979",
      "1700000000000",
      "2024-01-15"
    ))
  })
})

describe("e-mail addresses", () => {
  it("redacts addresses in text", () => {
    check([
      ["john.doe@example.com", "[REDACTED:email]", { email: 1 }],
      ["mailto:jane+tag@sub.example.co.uk", "mailto:[REDACTED:email]", { email: 1 }],
      ["<user_name@my-domain.org>", "<[REDACTED:email]>", { email: 1 }],
      ["First.Last@Example.COM wrote", "[REDACTED:email] wrote", { email: 1 }],
      ["write to a.b@c.io.", "write to [REDACTED:email].", { email: 1 }],
      ["ops%team@corp.io, dev@corp.io", "[REDACTED:email], [REDACTED:email]", { email: 2 }],
      ["https://user@host.example.com/path", "https://[REDACTED:email]/path", { email: 1 }],
      ["idn x@xn--80ak6aa92e.xn--p1ai", "idn [REDACTED:email]", { email: 1 }],
      ["user..name@example.com", "user..[REDACTED:email]", { email: 1 }]
    ])
  })

  it("leaves near misses alone", () => {
    check(unchanged(
      "a@a@a@a@a",
      "user@localhost",
      "user@.com",
      "user@com.",
      "@example.com",
      "user@example",
      "user@example.c",
      "user@example.c0m",
      "user@example.123",
      "user@-example.com",
      "user@example-.com",
      "user@example..com",
      "user.@example.com",
      "john@exa_mple.com",
      "user@@example.com",
      "é@example"
    ))
  })
})

describe("US social security numbers", () => {
  it("redacts SSNs in issuable ranges", () => {
    check([
      ["123-45-6789", "[REDACTED:ssn]", { ssn: 1 }],
      ["SSN: 078-05-1120.", "SSN: [REDACTED:ssn].", { ssn: 1 }],
      ["123 45 6789", "[REDACTED:ssn]", { ssn: 1 }],
      ["ssn=001-01-0001", "ssn=[REDACTED:ssn]", { ssn: 1 }],
      ["899-99-9999 and 234-56-7890", "[REDACTED:ssn] and [REDACTED:ssn]", { ssn: 2 }],
      ["4111-1111-1111-1111 123 45 6789", "[REDACTED:card] [REDACTED:ssn]", { card: 1, ssn: 1 }],
      ["123-45-6789-4111111111111111", "[REDACTED:ssn]-[REDACTED:card]", { ssn: 1, card: 1 }],
      ["123-45-6789-1234", "[REDACTED:ssn]-1234", { ssn: 1 }]
    ])
  })

  it("leaves invalid areas, groups and serials, and other shapes alone", () => {
    check(unchanged(
      "000-12-3456",
      "666-12-3456",
      "900-12-3456",
      "999-12-3456",
      "123-00-4567",
      "123-45-0000",
      "123456789", // bare digits: too many other numbers look like this
      "123-45-67890",
      "1234-56-7890",
      "123-45 6789", // mixed separators
      "x123-45-6789"
    ))
  })
})

describe("IBANs", () => {
  it("redacts valid IBANs of several countries, compact and in groups of four", () => {
    for (const iban of IBANS) {
      const grouped = iban.replace(/(.{4})(?!$)/g, "$1 ")
      check([
        [iban, "[REDACTED:iban]", { iban: 1 }],
        [`IBAN: ${grouped}, thanks`, "IBAN: [REDACTED:iban], thanks", { iban: 1 }]
      ])
    }
  })

  it("leaves bad check digits, wrong lengths, unknown countries and lower case alone", () => {
    check(unchanged(
      "DE89370400440532013001",
      "GB82WEST12345698765433",
      "GB82 WEST 1234 5698 7654 33",
      "DE8937040044053201300",
      "DE893704004405320130000",
      "DE89 3704 0044 0532 0130 001",
      "XX89370400440532013000",
      "de89370400440532013000",
      "DE89 370400440532013000"
    ))
  })
})

describe("credentials", () => {
  it("redacts every credential format, alone and in context", () => {
    for (const [kind, values] of Object.entries(CREDENTIALS)) {
      for (const value of values) {
        check([
          [value, `[REDACTED:${kind}]`, { [kind]: 1 }],
          [`token=${value}\n`, `token=[REDACTED:${kind}]\n`, { [kind]: 1 }],
          [`"${value}", "${value}"`, `"[REDACTED:${kind}]", "[REDACTED:${kind}]"`, { [kind]: 2 }]
        ])
      }
    }
  })

  it("redacts a private key without its footer up to the end of its body", () => {
    check([
      [
        "key: -----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIB+x/9==\n(truncated)",
        "key: [REDACTED:private_key](truncated)",
        { private_key: 1 }
      ]
    ])
  })

  it("leaves look-alikes alone", () => {
    const aws = "AK" + "IA"
    check(unchanged(
      aws + "IOSFODNN7EXAMPL", // 15 after the prefix
      aws + "IOSFODNN7EXAMPLEX", // 17
      "akia" + "iosfodnn7example",
      "AKIB" + "IOSFODNN7EXAMPLE",
      "X" + aws + "IOSFODNN7EXAMPLE",
      aws + "iosfodnn7example",
      "gh" + "p_" + "a".repeat(35),
      "gh" + "x_" + "a".repeat(36),
      "gh" + "p_" + "a".repeat(20) + "-" + "a".repeat(20),
      "github" + "_pat_" + "short",
      "xo" + "xz-" + "1234567890123",
      "xo" + "xb-" + "123",
      "xo" + "xb_" + "1234567890123",
      "xo" + "xb-" + "1234567890123_x",
      "sk" + "_test_" + "4eC39HqLyjWDarjtT1zdp7dc",
      "pk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
      "sk" + "_live_" + "short",
      "AI" + "za" + "SyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsH", // 34
      "AI" + "za" + "SyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHII", // 36
      "Ai" + "za" + "SyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI",
      "eyJhbGciOiJIUzI1NiJ9",
      "eyJhbGciOiJIUzI1NiJ9.abc.def",
      "eyJ.eyJ.x",
      "x" + "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
      "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
      "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----",
      "-----BEGIN-----BEGIN-----BEGIN-----",
      "-----BEGIN " + "PRIVATE KEY",
      "-----BEGIN " + "PRIVATE KEYS-----"
    ))
  })
})

describe("bearer tokens", () => {
  it("redacts the token of an Authorization value, keeping the scheme", () => {
    check([
      ["Authorization: Bearer s3cr3t-token-123", "Authorization: Bearer [REDACTED:bearer_token]", { bearer_token: 1 }],
      [
        "{\"authorization\":\"Bearer AbCdEfGhIjKlMnOp\"}",
        "{\"authorization\":\"Bearer [REDACTED:bearer_token]\"}",
        { bearer_token: 1 }
      ],
      ["authorization: bearer x9y8z7w6v5u4", "authorization: bearer [REDACTED:bearer_token]", { bearer_token: 1 }],
      ["Bearer abc/DEF+ghi~jkl.mno_pq==, next", "Bearer [REDACTED:bearer_token], next", { bearer_token: 1 }],
      // a JWT or a Janus token sent as a bearer token is reported as what carried it
      [`Bearer ${CREDENTIALS.jwt[0]}`, "Bearer [REDACTED:bearer_token]", { bearer_token: 1 }],
      [`Bearer ${CREDENTIALS.janus_token[0]}`, "Bearer [REDACTED:bearer_token]", { bearer_token: 1 }]
    ])
  })

  it("leaves prose about bearer tokens alone", () => {
    check(unchanged(
      "Bearer tokens are sent in the Authorization header.",
      "The bearer of this letter is a friend of mine.",
      "Use the Bearer authentication scheme (RFC 6750).",
      "Bearer internationalization",
      "Bearer token-based access",
      "Bearer abc123",
      "Bearer [REDACTED:bearer_token]",
      "Bearers X1234567890"
    ))
  })
})

describe("Janus tokens and sk- API keys", () => {
  it("leaves the prefixes and prose alone", () => {
    check(unchanged(
      "Janus client tokens start with jn" + "s_ and admin tokens with jn" + "a_.",
      "jn" + "s_short",
      "xjn" + "s_q8Z4tX0bN3mLr7Vw2Yk9Pc5Hd1Fs6Ga0Je4Ub8Ti2Oo",
      "sk-learn is a Python library for machine learning",
      "scikit-learn (sk-learn) 1.5.2",
      "sk-2024-planning-document-final-version-two",
      "sk-SHORT1a",
      "task-" + "T3BlbkFJaZ09aZ09aZ09aZ09aZ09"
    ))
  })
})

describe("credentials assigned to a credential's name", () => {
  it("redacts the value of password=, api_key:, client_secret and the like", () => {
    check([
      ["password=hunter2", "password=[REDACTED:credential]", { credential: 1 }],
      [
        "GET /login?user=jo&password=hunter2&next=/home",
        "GET /login?user=jo&password=[REDACTED:credential]&next=/home",
        { credential: 1 }
      ],
      ["DB_PASSWORD=correcthorse", "DB_PASSWORD=[REDACTED:credential]", { credential: 1 }],
      ["api_key: abcdefghij", "api_key: [REDACTED:credential]", { credential: 1 }],
      ["X-Api-Key: abcdef", "X-Api-Key: [REDACTED:credential]", { credential: 1 }],
      ["client_secret = 'xyz w'", "client_secret = '[REDACTED:credential]'", { credential: 1 }],
      ["{\"apiKey\": \"abc\"}", "{\"apiKey\": \"[REDACTED:credential]\"}", { credential: 1 }],
      ["accessToken=abc.def", "accessToken=[REDACTED:credential]", { credential: 1 }],
      ["--password=s3cret --user=x", "--password=[REDACTED:credential] --user=x", { credential: 1 }],
      ["password: hunter2", "password: [REDACTED:credential]", { credential: 1 }],
      ["Password: \"correct horse battery staple\"", "Password: \"[REDACTED:credential]\"", { credential: 1 }],
      ["secret: p@ss", "secret: [REDACTED:credential]", { credential: 1 }],
      // the whole value is the credential, whatever it looks like
      [
        `refresh_token=${CREDENTIALS.github_token[0]}`,
        "refresh_token=[REDACTED:credential]",
        { credential: 1 }
      ]
    ])
  })

  it("leaves prose, other names and empty values alone", () => {
    check(unchanged(
      "Forgot your password? Reset it here.",
      "password: required",
      "Password: Must contain eight characters",
      "The secret: nobody knows.",
      "Secret: Sauce",
      "the api_key parameter is optional",
      "passwordless login",
      "password_hint=blue",
      "token=abc",
      "key=value",
      "if password == null",
      "password=",
      "password=[REDACTED:card]",
      "password: \"[REDACTED:credential]\""
    ))
  })
})

describe("HTTP Basic credentials", () => {
  const basic = (user: string, password: string) => Buffer.from(`${user}:${password}`).toString("base64")

  it("redacts the base64 user:password after Basic, in any case of the scheme, keeping the scheme", () => {
    check([
      ["Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED:basic_auth]", { basic_auth: 1 }],
      ["authorization: basic dXNlcjpwYXNz", "authorization: basic [REDACTED:basic_auth]", { basic_auth: 1 }],
      ["AUTHORIZATION: BASIC dXNlcjpwYXNz", "AUTHORIZATION: BASIC [REDACTED:basic_auth]", { basic_auth: 1 }],
      [`Basic ${basic("aladdin", "opensesame")}`, "Basic [REDACTED:basic_auth]", { basic_auth: 1 }],
      [`Basic ${basic("user", "pw")}.`, "Basic [REDACTED:basic_auth].", { basic_auth: 1 }],
      [`Basic ${basic("josé", "pässwörd")}`, "Basic [REDACTED:basic_auth]", { basic_auth: 1 }],
      [`Basic ${basic("", "azure-devops-pat-1234")}`, "Basic [REDACTED:basic_auth]", { basic_auth: 1 }],
      [
        `{"authorization":"Basic ${basic("api", "k3y")}"}`,
        "{\"authorization\":\"Basic [REDACTED:basic_auth]\"}",
        { basic_auth: 1 }
      ]
    ])
  })

  it("leaves the word Basic before ordinary words, and base64 that is no user:password, alone", () => {
    check(unchanged(
      "Basic authentication sends the password in every request.",
      "Use Basic Authentication only over TLS",
      "Basic usage: janus serve",
      "Basic Only", // decodes to text with a colon, but is four characters
      "BASIC OVERVIEW",
      "Basic dXNlcnBhc3M=", // base64 of "userpass": no colon
      "Basic " + Buffer.from([0, 1, 2, 58, 3, 4]).toString("base64"), // binary, not text
      "Basic dXNlcjpwYXNz_x", // glued to a word
      "Basics dXNlcjpwYXNz",
      "Basic [REDACTED:basic_auth]"
    ))
  })
})

describe("credentials assigned to a bare token", () => {
  it("redacts a value of token= that looks like a credential, in a query string or a form", () => {
    check([
      ["GET /cb?token=8f3a9c1d2e4b5a6f&next=/", "GET /cb?token=[REDACTED:credential]&next=/", { credential: 1 }],
      ["token=AbCdEfGhIjKl", "token=[REDACTED:credential]", { credential: 1 }],
      ["TOKEN=s3cr3tvalue", "TOKEN=[REDACTED:credential]", { credential: 1 }],
      ["user=jo&token=x/Y+z9abcd==&x=1", "user=jo&token=[REDACTED:credential]&x=1", { credential: 1 }],
      // a key there is reported as what it is
      ["?token=" + CREDENTIALS.github_token[0], "?token=[REDACTED:github_token]", { github_token: 1 }]
    ])
  })

  it("leaves short and word values, other separators and other names alone", () => {
    check(unchanged(
      "token=abc",
      "token=expired",
      "token=undefined",
      "page_token=next",
      "token=page2",
      "token=1234567", // seven characters
      "token = abcDEF123456", // not an assignment in a query string or a form
      "token: abcDEF123456",
      "{\"token\": \"abcDEF123456\"}",
      "tokens=abcDEF123456",
      "token=[REDACTED:card]"
    ))
  })
})

describe("GitLab tokens and provider sk- keys", () => {
  it("leaves glpat in prose and keys without a random body alone", () => {
    check(unchanged(
      "GitLab personal access tokens start with gl" + "pat- and are 20 characters after it.",
      "gl" + "pat-" + "short1",
      "gl" + "pat-" + "prefix-tokens-are-documented-here",
      "gl" + "pat_" + "xK3vR9tQ2mN7pL4wZ8yB",
      "xgl" + "pat-" + "xK3vR9tQ2mN7pL4wZ8yB",
      "glx-" + "xK3vR9tQ2mN7pL4wZ8yB",
      "sk" + "-ant-" + "api-keys-are-described-in-the-docs",
      "sk" + "-proj-" + "planning-document-final-version"
    ))
  })

  it("redacts a provider key inside a longer sk- run, and bearer tokens in any case of the scheme", () => {
    check([
      [
        "sk-x-" + "sk" + "-ant-api03-" + "abcdefghij0123456789",
        "sk-x-[REDACTED:sk_api_key]",
        { sk_api_key: 1 }
      ],
      ["BEARER x9y8z7w6v5u4", "BEARER [REDACTED:bearer_token]", { bearer_token: 1 }],
      ["bEaReR x9y8z7w6v5u4", "bEaReR [REDACTED:bearer_token]", { bearer_token: 1 }]
    ])
  })
})

describe("cards written with full-width digits or invisible characters", () => {
  const wide = (digits: string) => digits.replace(/[0-9]/g, (d) => String.fromCharCode(0xff10 + Number(d)))

  it("redacts full-width digits and digits split by invisible characters, covering the whole span", () => {
    check([
      [wide("4111111111111111"), "[REDACTED:card]", { card: 1 }],
      [`カード${wide("4111 1111 1111 1111")}です`, "カード[REDACTED:card]です", { card: 1 }],
      [`card ${wide("5555-5555-5555-4444")}.`, "card [REDACTED:card].", { card: 1 }],
      ["4111" + wide("111111111111"), "[REDACTED:card]", { card: 1 }],
      ["4111\u200B1111\u200B1111\u200B1111", "[REDACTED:card]", { card: 1 }],
      ["4\u200C1\u200D1\u20601\uFEFF1\u00AD11111111111", "[REDACTED:card]", { card: 1 }],
      ["4111\u200B\u200B\u200B111111111111 ok", "[REDACTED:card] ok", { card: 1 }],
      ["4111\u200B 1111 \u200B1111 1111", "[REDACTED:card]", { card: 1 }],
      [`pay ${wide("4111")}\u200B${wide("111111111111")}!`, "pay [REDACTED:card]!", { card: 1 }],
      ["\u200B4111111111111111\u200B", "\u200B[REDACTED:card]\u200B", { card: 1 }],
      [wide("123-45-6789"), "[REDACTED:ssn]", { ssn: 1 }],
      [
        `{"card":"${wide("4111111111111111")}","n":"4111\u200B1111\u200B1111\u200B1111"}`,
        "{\"card\":\"[REDACTED:card]\",\"n\":\"[REDACTED:card]\"}",
        { card: 2 }
      ]
    ])
  })

  it("leaves invalid numbers and digits glued to words alone, as it does in ASCII", () => {
    check(unchanged(
      wide("4111111111111112"), // Luhn-invalid
      `id${wide("4111111111111111")}`,
      `${wide("4111111111111111")}abc`,
      `id4111\u200B111111111111`, // the invisible joins the digits to the word
      `x${wide("1")}4111111111111111`,
      "4111\u200B1111\u200B1111\u200B1111\u200B2027", // twenty digits in one group
      wide("41 11 11 11 11 11 11 11"),
      "４１１１\u3000１１１１\u3000１１１１\u3000１１１１" // an ideographic space is no separator
    ))
  })
})

describe("mixed text", () => {
  it("counts every kind in one log line", () => {
    check([
      [
        `user=jane@corp.io card=5555 5555 5555 4444 ssn=123-45-6789 key=${CREDENTIALS.aws_access_key[0]} ok`,
        "user=[REDACTED:email] card=[REDACTED:card] ssn=[REDACTED:ssn] key=[REDACTED:aws_access_key] ok",
        { email: 1, card: 1, ssn: 1, aws_access_key: 1 }
      ]
    ])
  })

  it("leaves markers that are already there alone", () => {
    check(unchanged("[REDACTED:card]", "x [REDACTED:email] y [REDACTED:employee_id]"))
  })
})
