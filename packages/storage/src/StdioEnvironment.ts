/**
 * Which variables a stdio upstream's `env` may give its program: the one
 * rule, checked when a connection is written (`Connections`: the admin API,
 * an apply, `JANUS_CONFIG_FILE`, the CLI) and again by the gateway before
 * every spawn (a connection stored under an older rule is not run).
 *
 * The command allow-list (`JANUS_STDIO_COMMANDS`) is what keeps an admin
 * from running code on the gateway's hosts; a variable that makes an
 * allowed program (or the loader, shell or interpreter under it) load other
 * code or configuration would undo it. So the rule allows names, and then
 * refuses the known knobs among them.
 *
 * **Rules**
 *
 * - A name is upper-case letters, digits and `_`, starting with a letter, at
 *   most 128 characters ({@link NamePattern}, `^[A-Z][A-Z0-9_]{0,127}$`):
 *   how API keys and settings are named (`GITHUB_TOKEN`, `API_KEY`,
 *   `LOG_LEVEL`). Lower-case names (`npm_config_*`, `http_proxy`) and names
 *   starting with `_` (`_JAVA_OPTIONS`) are refused.
 * - Refused besides: every name in {@link DENIED} and every name starting
 *   with one of {@link DENIED_PREFIXES}, i.e. what changes how programs,
 *   dynamic loaders, shells and interpreters behave or where they load code
 *   and configuration from (`LD_*`, `DYLD_*`, `NODE_*`, `BASH_ENV`, `ENV`,
 *   `GCONV_PATH`, `PYTHON*`, `PERL*`, `RUBY*`, `JAVA_*`, `GIT_*`, `IFS`,
 *   `PS4`, ...), and the variables the gateway itself gives every program
 *   (`PATH`, `HOME`, `SHELL`, `TMPDIR`): a program's PATH is the gateway's,
 *   never the connection's. {@link ALLOWED} names a few harmless settings
 *   inside a refused prefix (`PYTHONUNBUFFERED`, ...).
 * - The refusal names the variable and says what is expected
 *   ({@link EXPECTED}).
 *
 * @since 0.1.0
 */

/** The names a stdio program's `env` may use (before the refusals below). */
export const NamePattern = /^[A-Z][A-Z0-9_]{0,127}$/

/** Whole names refused: shells, glibc, tools that run a command or load a module named in a variable. */
export const DENIED: ReadonlySet<string> = new Set([
  // set by the gateway for every program
  "PATH",
  "HOME",
  "SHELL",
  "TMPDIR",
  "TMP",
  "TEMP",
  // shells
  "ENV",
  "IFS",
  "CDPATH",
  "GLOBIGNORE",
  "SHELLOPTS",
  "PS1",
  "PS2",
  "PS3",
  "PS4",
  "PROMPT_COMMAND",
  "ZDOTDIR",
  "HISTFILE",
  // glibc and the resolver
  "GCONV_PATH",
  "GLIBC_TUNABLES",
  "LOCPATH",
  "NLSPATH",
  "HOSTALIASES",
  "RESOLV_HOST_CONF",
  "LOCALDOMAIN",
  "RES_OPTIONS",
  "TZDIR",
  // programs that run a command named in a variable
  "EDITOR",
  "VISUAL",
  "PAGER",
  "MANPAGER",
  "BROWSER",
  "LESSOPEN",
  "LESSCLOSE",
  "LESSKEY",
  // Java, Go, Rust and others' code and option variables
  "CLASSPATH",
  "GOFLAGS",
  "GOENV",
  "GOPATH",
  "GOROOT",
  "GOPROXY",
  "GOTOOLCHAIN",
  "GOBIN",
  "RUSTFLAGS",
  "RUSTDOCFLAGS",
  "TCLLIBPATH",
  "R_PROFILE",
  "R_PROFILE_USER",
  "R_ENVIRON",
  "R_ENVIRON_USER",
  "R_LIBS",
  "R_LIBS_USER",
  "PHPRC",
  "PHP_INI_SCAN_DIR"
])

/** Name prefixes refused: loaders, interpreters and package tools configured through variables. */
export const DENIED_PREFIXES: ReadonlyArray<string> = [
  "LD_", // the dynamic loader (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT)
  "DYLD_", // macOS's
  "MALLOC_",
  "NODE_", // NODE_OPTIONS, NODE_PATH, NODE_EXTRA_CA_CERTS, NODE_TLS_REJECT_UNAUTHORIZED
  "NPM_CONFIG_", // npm reads these case-insensitively: another registry for `npx` is other code
  "YARN_",
  "PNPM_",
  "COREPACK_",
  "BUN_",
  "DENO_",
  "ELECTRON_",
  "BASH", // BASH_ENV, BASHOPTS, BASH_FUNC_*
  "PYTHON", // PYTHONSTARTUP, PYTHONPATH, PYTHONHOME, PYTHONWARNINGS (imports a module), ...
  "PIP_",
  "PIPX_",
  "UV_",
  "CONDA",
  "VIRTUAL_ENV",
  "PERL", // PERL5OPT, PERL5LIB, PERLLIB, PERL5DB
  "RUBY", // RUBYOPT, RUBYLIB
  "GEM_",
  "BUNDLE_", // BUNDLE_GEMFILE is code
  "JAVA_", // JAVA_TOOL_OPTIONS, JAVA_OPTIONS, JAVA_HOME
  "JDK_", // JDK_JAVA_OPTIONS
  "DOTNET_", // DOTNET_STARTUP_HOOKS
  "CORECLR_",
  "COR_", // COR_PROFILER
  "CARGO_",
  "RUSTC_", // RUSTC_WRAPPER
  "RUSTUP_",
  "LUA_", // LUA_INIT, LUA_PATH, LUA_CPATH
  "GIT_", // GIT_SSH_COMMAND, GIT_EXEC_PATH, GIT_CONFIG_*
  "SSH_", // SSH_ASKPASS
  "OPENSSL_", // OPENSSL_CONF loads engines
  "XDG_" // where configuration files are read from
]

/** Harmless settings inside a refused prefix. */
export const ALLOWED: ReadonlySet<string> = new Set([
  "PYTHONUNBUFFERED",
  "PYTHONIOENCODING",
  "PYTHONUTF8",
  "PYTHONDONTWRITEBYTECODE"
])

/** What a stdio program's variable must be, for the error that refuses another. */
export const EXPECTED = "a variable name of upper-case letters, digits and _ starting with a letter " +
  "(such as API_KEY or GITHUB_TOKEN) that does not change how programs, loaders or interpreters behave " +
  "(LD_*, DYLD_*, NODE_*, BASH*, ENV, PATH, HOME, GCONV_PATH, PYTHON*, PERL*, RUBY*, JAVA_*, GIT_*, IFS, PS4 " +
  "and the like are refused; PATH and HOME are the gateway's)"

/** Whether the connection's `env` may give a program the variable `name`. */
export const allows = (name: string): boolean => {
  if (!NamePattern.test(name)) return false
  if (ALLOWED.has(name)) return true
  if (DENIED.has(name)) return false
  return !DENIED_PREFIXES.some((prefix) => name.startsWith(prefix))
}

/** The first variable of `env` the rule refuses, if any (in the order given). */
export const firstRefused = (env: Readonly<Record<string, unknown>>): string | undefined =>
  Object.keys(env).find((name) => !allows(name))
