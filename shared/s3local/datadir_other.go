//go:build !linux

package s3local

// memDir is "" off Linux: the gateway keeps its data in the temporary
// directory.
func memDir() string { return "" }
