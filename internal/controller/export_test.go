package controller

// WriteStatus exposes writeStatus to the integration tests.
var WriteStatus = writeStatus

// EnsureFinalizer exposes ensureFinalizer to the integration tests.
var EnsureFinalizer = ensureFinalizer
