// Package usertest holds the tests of the way in for people who write their
// own lock outside this module: the custom-binary example module
// (examples/customlock) builds on its own and runs, a fresh module with its
// own lock passes (and, broken, fails) the locktest conformance suite, and
// the README's snippets are the example's compiled files. It has no code of
// its own.
package usertest
