package runner

// ExpectationForInfo is expectationFor for tests: the expectation of a
// lock that need not be registered.
var ExpectationForInfo = expectationFor
