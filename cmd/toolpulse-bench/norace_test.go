//go:build !race

package main

// raceBuild says that the tests were built with -race.
const raceBuild = false
