/**
 * Shared fixtures of the redaction tests. Credential-shaped strings are put
 * together at run time, so that no secret scanner mistakes this file for a leak.
 */
import { Result } from "effect"
import { type Engine, makeEngine, type RedactorOptions } from "../../src/redaction/index.ts"

export const engineOf = (options: Partial<RedactorOptions> = {}): Engine =>
  Result.getOrThrow(makeEngine({ enabled: true, ...options }))

/** Test card numbers of each network, all Luhn-valid. */
export const CARDS: ReadonlyArray<readonly [brand: string, number: string]> = [
  ["visa", "4111111111111111"],
  ["visa", "4012888888881881"],
  ["visa", "4222222222222"],
  ["visa", "4111111111111111003"],
  ["mastercard", "5555555555554444"],
  ["mastercard", "5105105105105100"],
  ["mastercard", "2223003122003222"],
  ["amex", "378282246310005"],
  ["amex", "371449635398431"],
  ["discover", "6011111111111117"],
  ["discover", "6011000990139424"],
  ["discover", "6445644564456007"],
  ["diners", "30569309025904"],
  ["diners", "38520000023237"],
  ["diners", "36227206271667"],
  ["jcb", "3530111333300000"],
  ["jcb", "3566002020360505"],
  ["unionpay", "6200000000000005"],
  ["unionpay", "6212345678901234502"],
  ["maestro", "6759649826438453"],
  ["maestro", "6304000000000000"],
  ["mir", "2200000000000004"],
  ["rupay", "6070123456789009"],
  ["verve", "5061001234567009"],
  ["troy", "9792001234560002"]
]

/** Valid IBANs of several countries (registry examples), compact. */
export const IBANS: ReadonlyArray<string> = [
  "DE89370400440532013000",
  "GB82WEST12345698765432",
  "GB29NWBK60161331926819",
  "FR1420041010050500013M02606",
  "NL91ABNA0417164300",
  "BE68539007547034",
  "ES9121000418450200051332",
  "IT60X0542811101000000123456",
  "CH9300762011623852957",
  "NO9386011117947",
  "MT84MALT011000012345MTLCAST001S",
  "SA0380000000608010167519",
  "PL61109010140000071219812874"
]

const repeat = (s: string, n: number) => s.repeat(n)

/** One credential of each format, built at run time. */
export const CREDENTIALS = {
  aws_access_key: ["AK" + "IA" + "IOSFODNN7EXAMPLE", "AS" + "IA" + "Y34FZKBOKMUTVV7A"],
  github_token: [
    "gh" + "p_" + "16C7e42F292c6912E7710c838347Ae178B4a",
    "gh" + "o_" + repeat("aB3", 12),
    "gh" + "u_" + repeat("Zz9", 12),
    "gh" + "s_" + repeat("x1Y", 12),
    "gh" + "r_" + repeat("Q7w", 13),
    "github" + "_pat_" + "11ABCDEFG0" + repeat("a1B2c3", 4) + "_" + repeat("Xy9", 20)
  ],
  slack_token: [
    "xo" + "xb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx",
    "xo" + "xp-" + "1234567890-1234567890-1234567890-abcdef0123456789abcdef0123456789"
  ],
  stripe_key: ["sk" + "_live_" + "4eC39HqLyjWDarjtT1zdp7dc", "rk" + "_live_" + "51H8aBcDeFgHiJkLmNoPqRsT"],
  google_api_key: ["AI" + "za" + "SyDdI0hCZtE6vySjMm-WEfRq3CPzqKqqsHI"],
  janus_token: [
    "jn" + "s_" + "q8Z4tX0bN3mLr7Vw2Yk9Pc5Hd1Fs6Ga0Je4Ub8Ti2Oo",
    "jn" + "a_" + "Xy7-Kq2_Zt5Wm8Rn1Bv4Cx0Lp3Hj6Gd9Fs2Qa5Ew8Tu"
  ],
  sk_api_key: [
    "sk" + "-" + "T3BlbkFJ" + repeat("aZ09", 10),
    "sk" + "-proj-" + "Ab12Cd34Ef56Gh78Ij90Kl12Mn34Op56Qr78St90Uv12Wx34",
    "sk" + "-ant-api03-" + "Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0Fe-_" + repeat("Ab1", 10) + "AA",
    // written in lower case, it is still the key
    "sk" + "-ant-api03-" + "zx9yw8vu7ts6rq5po4nm3lk2ji1hg0fe-_" + repeat("ab1", 10) + "aa",
    "sk" + "-proj-" + "ab12cd34ef56gh78ij90kl12mn34op56"
  ],
  gitlab_token: [
    "gl" + "pat-" + "xK3vR9tQ2mN7pL4wZ8yB",
    "gl" + "pat-" + "hbTD0l5yL3Ep5d0RHYZ0Em86MQp1OmhrCg" + ".01.0z1h0acyq",
    "gl" + "dt-" + "abcdefghij0123456789",
    "gl" + "rt-" + "AbCdEfGhIjKlMnOpQrStUv"
  ],
  jwt: [
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9" +
    ".eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ" +
    ".SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
    "eyJhbGciOiJub25lIn0" + ".eyJzdWIiOiJhZG1pbiJ9" + "."
  ],
  private_key: [
    "-----BEGIN RSA " + "PRIVATE KEY-----\nMIIEpAIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\n" +
    "aFDrBz9vFqU4yz1e2DVmV0qSLaE=\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN " + "PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\n-----END PRIVATE KEY-----",
    "-----BEGIN OPENSSH " +
    "PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
    "-----BEGIN ENCRYPTED " + "PRIVATE KEY-----\nMIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkq\n-----END ENCRYPTED PRIVATE KEY-----",
    "-----BEGIN PGP " + "PRIVATE KEY BLOCK-----\n\nlQOYBF0AAAAB\n-----END PGP PRIVATE KEY BLOCK-----"
  ]
} as const
