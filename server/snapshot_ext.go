package server

import "fmt"

// frozenValueExt and loadableExt extend snapshots to the value types
// beyond strings and lists; each type adds its case here.
func frozenValueExt(v any) any { panic(fmt.Sprintf("server: no snapshot view for %T", v)) }

func loadableExt(v any) bool { return false }
