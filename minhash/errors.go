package minhash

import (
	"errors"
	"fmt"
)

// ErrInvalidOptions is returned (wrapped) for any option that is out of
// range; the message names the field.
var ErrInvalidOptions = errors.New("minhash: invalid options")

func optionError(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalidOptions, field, fmt.Sprintf(format, args...))
}
