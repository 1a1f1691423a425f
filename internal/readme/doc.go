// Package readme holds the tests that keep the pages a user reads honest.
//
//   - Every ```go block of README.md and docs/*.md is a complete Go file
//     without its package clause: the tests compile each one (go build,
//     each block a package of its own, so blocks may reuse names) and
//     check that it handles every error it assigns. The guide's
//     handleInvoice block also appears verbatim in
//     drivers/goredis/example_unlock_test.go, which runs it as
//     Example_leaseUnlock and with an ended context.
//   - Every relative link and anchor of those pages and bench/RESULTS.md
//     leads somewhere.
//   - README.md's install words, run in a scratch module outside the
//     repository, build README.md's first example (TestInstallFromAClone).
//   - docs/guide.md opens with a "How to use it" layer: a section with
//     code and a runnable example for each primitive; every Example a
//     page names exists (TestGuideExamplesExist).
//   - No page a user reads — README.md, docs/*.md, bench/RESULTS.md, the
//     package docs of the released modules, and the --help of
//     scripts/bench.sh, scripts/release.sh and the scriptlock CLI — names
//     a tracker issue, carries a dated aside or development history, or
//     counts three drivers (TestManualNotALog; the rules and what they
//     leave alone are in manual_test.go). A results page may name its
//     run's date in its header, the lines before its first "## " heading.
//
// go test -short skips the two that run the go command on a scratch
// module or build the CLI.
package readme
