package events

// MayPass is mayPass, for the tests.
var MayPass = mayPass
