// Package httpapi serves an lshdb index's API over HTTP/JSON: the methods
// of *db.DB as endpoints (openapi.yaml describes each, and GET
// /v1/openapi.yaml serves it), with the JSON shapes of the command's
// --output json. lshdb serve is its standalone server; a program that
// embeds an index opts in with one call, ServeSocket, which serves it on
// the index's socket (where the command attaches), or serves it on a
// listener of its choice:
//
//	d, err := db.Open(dir, nil)
//	...
//	l, err := httpapi.ListenSocket(httpapi.SocketPath(dir)) // DIR/lshdb.sock, mode 0600
//	srv := &http.Server{Handler: httpapi.Handler(d, nil), ReadHeaderTimeout: 10 * time.Second,
//		MaxHeaderBytes: httpapi.MaxHeaderBytes}
//	go srv.Serve(l)
//	...
//	srv.Shutdown(ctx) // then
//	d.Close()
//
// # Errors
//
// An error answer is {"error":{"code":"...","message":"..."}}: Codes maps
// each of db's sentinels, and the API's own (ErrBadRequest,
// ErrBodyTooLarge, ErrUnauthorized, …), to a stable code and an HTTP
// status, matched with errors.Is in the table's order. Package db/client
// turns them back into errors that match the same sentinels.
//
// # Streams
//
// Pairs, clusters and put-if-new answer in JSON Lines. Pairs and clusters
// end with an {"end":{...}} line, so that a client tells a complete
// stream from one cut short; a stream that fails after its first line
// ends with an error line (its status is already 200).
//
// # Limits and cancellation
//
// Request bodies are bounded (Options.MaxBodyBytes) and must be UTF-8, as
// JSON is (a body with other bytes is refused as bad_request: Go's
// decoder would turn them into U+FFFD, and two ids would become one);
// each write of an
// answer has its own deadline (Options.WriteTimeout) instead of the
// server's whole-response one, which would cut long calls short. Every
// call runs under the request's context: a client that goes away cancels
// its query, pairs, check or stats. Configure the server's ReadTimeout,
// ReadHeaderTimeout and MaxHeaderBytes (MaxHeaderBytes; net/http's
// default lets each connection make the server hold 1 MiB of header
// before any token is seen); the handler cannot.
//
// # Caveats
//
// JSON strings are UTF-8: a body with an invalid byte, or with the
// escape of a lone UTF-16 surrogate (no character: Go's decoder would
// make it U+FFFD, and two ids one), is refused (see Limits). Ids in query
// strings arrive as sent, so db refuses an invalid one (invalid_id); a
// text there that is not UTF-8 is refused too.
// Anyone who can connect can read and write the whole index: restrict the
// socket (ListenSocket makes it 0600) or set Options.Token, and give the
// clients that only read Options.ReadToken, which cannot write. A backup
// request over TCP needs Options.BackupRoot, under which it must write
// (where no user but the server's and root can change the way to it);
// through a Unix socket it may write anywhere the server may.
package httpapi
