package db

import (
	"context"
	"os"
)

func osMkdirTemp(dir, pattern string) (string, error) { return os.MkdirTemp(dir, pattern) }

func contextBackground() context.Context { return context.Background() }
