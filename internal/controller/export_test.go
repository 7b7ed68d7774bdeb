package controller

// WriteStatus exposes writeStatus to the integration tests.
var WriteStatus = writeStatus
