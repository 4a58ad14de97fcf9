package httpapi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"

	"github.com/lshdb/lshdb/db"
)

// Errors of the API itself (not of the database). A client matches them
// with errors.Is like db's sentinels.
var (
	// ErrBadRequest is a request the API cannot read: malformed JSON, a
	// parameter that is not a number, an unknown field.
	ErrBadRequest = errors.New("lshdb: bad request")
	// ErrBodyTooLarge is a request body over Options.MaxBodyBytes.
	ErrBodyTooLarge = errors.New("lshdb: request body too large")
	// ErrBatchTooLarge is a request with more documents (or queries)
	// than Options.MaxBatch.
	ErrBatchTooLarge = errors.New("lshdb: batch too large")
	// ErrUnauthorized is a request without the server's bearer token.
	ErrUnauthorized = errors.New("lshdb: unauthorized")
	// ErrForbidden is a request whose token may not call its operation:
	// a write or maintenance request with the read-only token
	// (Options.ReadToken).
	ErrForbidden = errors.New("lshdb: forbidden")
	// ErrCrossSite is a request a web browser made for another site (it
	// carries a foreign Origin), or one that reached a loopback port
	// without a token under another host name (DNS rebinding): a web page
	// must not write to, or read from, a local index.
	ErrCrossSite = errors.New("lshdb: cross-site request refused")
	// ErrNoRoute is a path the API does not serve.
	ErrNoRoute = errors.New("lshdb: no such endpoint")
	// ErrMethod is a method the path does not accept.
	ErrMethod = errors.New("lshdb: method not allowed")
	// ErrRequestTimeout is a request body that did not arrive in time.
	ErrRequestTimeout = errors.New("lshdb: request timed out")
	// ErrInternal is any other failure of the server.
	ErrInternal = errors.New("lshdb: internal error")
	// ErrShutdown is the cause a server gives the contexts of the
	// requests it cancels as it shuts down (http.Server.BaseContext,
	// cancelled with context.WithCancelCause): their log lines say the
	// server cut them, not that the client went away, and they are
	// answered 503 shutdown (an error line, in a stream already
	// answering), which db/client returns as an error that matches it
	// and db.ErrClosed: worth a retry once a server is back.
	ErrShutdown = errors.New("lshdb: cut by the server's shutdown")
)

// Code is one entry of the error table: a stable code, the error it
// stands for, and its HTTP status.
type Code struct {
	Code   string
	Err    error
	Status int
}

// Codes is the error table, in the order errors are matched (errors.Is):
// the first entry an error matches names it. The codes are stable: clients
// and scripts may depend on them.
//
// NB: ErrDiskFull and ErrCorrupt come before the input errors, since a
// write refused for space may also carry its document's position.
var Codes = []Code{
	// NB: first: a request the server cut as it shut down may have
	// failed as a body read that timed out, or a cancelled call; 503, a
	// retry once a server is back.
	{"shutdown", ErrShutdown, http.StatusServiceUnavailable},
	{"unauthorized", ErrUnauthorized, http.StatusUnauthorized},
	{"forbidden", ErrForbidden, http.StatusForbidden},
	{"cross_site", ErrCrossSite, http.StatusForbidden},
	{"body_too_large", ErrBodyTooLarge, http.StatusRequestEntityTooLarge},
	{"batch_too_large", ErrBatchTooLarge, http.StatusRequestEntityTooLarge},
	{"request_timeout", ErrRequestTimeout, http.StatusRequestTimeout},
	{"bad_request", ErrBadRequest, http.StatusBadRequest},
	{"no_route", ErrNoRoute, http.StatusNotFound},
	{"method_not_allowed", ErrMethod, http.StatusMethodNotAllowed},
	{"closed", db.ErrClosed, http.StatusServiceUnavailable},
	// NB: before disk_full, which a store stopped on a full disk matches
	// too: what mends it is a restart of the server (once there is room).
	// It was "corrupt" (500), which says the index is damaged.
	{"stopped", db.ErrStopped, http.StatusServiceUnavailable},
	{"disk_full", db.ErrDiskFull, http.StatusInsufficientStorage},
	{"corrupt", db.ErrCorrupt, http.StatusInternalServerError},
	// NB: a Redis index's store unreachable, or failing over: worth a
	// retry, as a load balancer and a client take a 503 (it was a 500,
	// "internal"). A full Redis (OOM) is disk_full, above.
	// NB: a Redis index's store refusing the server's credentials: no
	// retry mends it (it was backend_unavailable, 503).
	{"backend_denied", db.ErrAccessDenied, http.StatusInternalServerError},
	{"backend_unavailable", db.ErrBackend, http.StatusServiceUnavailable},
	{"unsupported", db.ErrUnsupported, http.StatusNotImplemented},
	{"not_found", db.ErrNotFound, http.StatusNotFound},
	{"invalid_id", db.ErrInvalidID, http.StatusBadRequest},
	{"empty_document", db.ErrEmptyDocument, http.StatusUnprocessableEntity},
	{"doc_too_large", db.ErrDocTooLarge, http.StatusRequestEntityTooLarge},
	{"storage_mode", db.ErrStorageMode, http.StatusUnprocessableEntity},
	{"invalid_signature", db.ErrInvalidSignature, http.StatusBadRequest},
	{"invalid_doc", db.ErrInvalidDoc, http.StatusBadRequest},
	{"invalid_options", db.ErrInvalidOptions, http.StatusBadRequest},
	{"read_only", db.ErrReadOnly, http.StatusForbidden},
	{"params_mismatch", db.ErrParamsMismatch, http.StatusConflict},
	{"locked", db.ErrLocked, http.StatusConflict},
	{"format_too_new", db.ErrFormatTooNew, http.StatusConflict},
	{"format_old", db.ErrFormat, http.StatusConflict},
	{"not_index", db.ErrNotIndex, http.StatusConflict},
	{"not_exist", db.ErrNotExist, http.StatusNotFound},
	{"too_many_deletes", db.ErrTooManyDeletes, http.StatusConflict},
	{"too_few_documents", db.ErrTooFewDocuments, http.StatusConflict},
	// NB: 499 (nginx's "client closed request"): the client that went
	// away never reads it, but logs and metrics tell it from a failure.
	{"canceled", context.Canceled, 499},
	{"timeout", context.DeadlineExceeded, http.StatusGatewayTimeout},
	{"internal", ErrInternal, http.StatusInternalServerError},
}

// codeOf returns the table entry of err; an error that matches none is
// "internal".
func codeOf(err error) Code {
	for _, c := range Codes {
		if errors.Is(err, c.Err) {
			return c
		}
	}
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return codeByName("body_too_large")
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return codeByName("request_timeout")
	}
	return Codes[len(Codes)-1]
}

// CodeOf returns the stable code (Codes) that names err, as an error body
// or a stream's error line gives it: "internal" for an error of no other
// code.
func CodeOf(err error) string { return codeOf(err).Code }

func codeByName(name string) Code {
	for _, c := range Codes {
		if c.Code == name {
			return c
		}
	}
	return Codes[len(Codes)-1]
}

// ErrorOf returns the error a code stands for (ErrInternal for a code this
// build does not know), for a client to wrap.
func ErrorOf(code string) error { return codeByName(code).Err }

// ErrorJSON is the body of every error response, and the last line of a
// stream that failed: {"error":{"code":"not_found","message":"…"}}.
type ErrorJSON struct {
	Error ErrorBody `json:"error"`
}

// ErrorBody is an error's code and message and, for the error of one
// document of a request (a db.DocError) or one query (a db.QueryError),
// its position, its id and its own message: a client rebuilds the
// DocError or QueryError an in-process call returns.
type ErrorBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	// Index is the position of the document or query, from 0.
	Index *int `json:"index,omitempty"`
	// ID is the id of the document (a db.DocError only).
	ID *string `json:"id,omitempty"`
	// Cause is the message of the document's or query's own error (the
	// wrapped one: Message names the position too).
	Cause string `json:"cause,omitempty"`
	// Also names the errors of package io/fs the error matches besides
	// its code's sentinel ("exist", "not_exist", "permission"), so that a
	// client's error matches them as the in-process error does (a backup
	// into a directory that exists is ErrInvalidOptions and fs.ErrExist);
	// absent when none.
	Also []string `json:"also,omitempty"`
	// Retry says that the same request may succeed later, unchanged: the
	// server shutting down or closing, a lock or an index that another
	// process holds (locked; read_only from an owner that reads only,
	// until it closes the index), a Redis index's servers failing over
	// (backend_unavailable, db.Transient). Absent (false): not without a
	// change, by the client or an operator. A client waits (Retry-After,
	// when the answer has it) and sends it again.
	//
	// NB: read_only said which in its message alone, which lshdb's
	// commands matched; a client of another language had to copy the
	// English (a review of the API from a client's side, AC13).
	Retry bool `json:"retry,omitempty"`
}

// retryable is ErrorBody.Retry of err, whose code is code.
func retryable(err error, code string) bool {
	switch code {
	case "shutdown", "closed", "locked":
		return true
	case "backend_unavailable":
		return db.Transient(err)
	case "read_only":
		var o ownerReadsOnly
		return errors.As(err, &o)
	}
	return false
}

// FSErrors are the io/fs errors ErrorBody.Also names, by name.
var FSErrors = map[string]error{"exist": fs.ErrExist, "not_exist": fs.ErrNotExist, "permission": fs.ErrPermission}

// errorBody is err's body with its table entry's code.
func errorBody(err error, c Code) ErrorBody {
	b := ErrorBody{Code: c.Code, Message: err.Error(), Retry: retryable(err, c.Code)}
	for _, name := range []string{"exist", "not_exist", "permission"} {
		if errors.Is(err, FSErrors[name]) {
			b.Also = append(b.Also, name)
		}
	}
	var de *db.DocError
	var qe *db.QueryError
	// NB: only when err is the DocError or QueryError itself (or says no
	// more than it): the client rebuilds that, message and all.
	switch {
	case errors.As(err, &de) && de.Err != nil && de.Error() == b.Message:
		b.Index, b.ID, b.Cause = &de.Index, &de.ID, de.Err.Error()
	case errors.As(err, &qe) && qe.Err != nil && qe.Error() == b.Message:
		b.Index, b.Cause = &qe.Index, qe.Err.Error()
	}
	return b
}

func badRequest(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadRequest, fmt.Sprintf(format, args...))
}
