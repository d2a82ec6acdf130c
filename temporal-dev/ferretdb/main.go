// Command ferretdb runs FerretDB v1.24.2 on SQLite for the local stack and the test suites, behind a
// relay on --listen-addr (relay.go) that gives it MongoDB's single-document atomicity and unique keys; its
// charter is at the top of docs/local-engine.md. It wraps FerretDB's embeddable package because the published
// cmd/ferretdb lacks build/version/version.txt and panics at start.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"

	"billing-checkout-api/temporal-dev/ferretdb/internal/index"
	"billing-checkout-api/temporal-dev/ferretdb/internal/paths"
)

func main() {
	listenAddr := flag.String("listen-addr", "127.0.0.1:27017", "TCP address to listen on")
	sqliteURL := flag.String("sqlite-url", "file:data/", "SQLite URI of the data directory (must end with a slash)")
	logLevel := flag.String("log-level", "error", "log level: debug, info, warn or error (error keeps per-connection chatter out of the log)")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: invalid --log-level %q: %v\n", *logLevel, err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	// On SIGINT/SIGTERM (also during start-up) the relay closes its listener and connections first; only
	// then is FerretDB told to stop. Its Run returns after closing its listener and the SQLite backend,
	// so the data is flushed.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// Clients reach FerretDB through the relay (see relay.go), so a busy port fails here, before SQLite is opened.
	ln, err := net.Listen("tcp", *listenAddr)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: %v\n", err)
		os.Exit(1)
	}

	// FerretDB itself listens on an OS-chosen loopback port. New binds it already (clientconn.Listen
	// closes tcpListenerReady), so MongoDBURI reports the actual port before Run.
	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: "127.0.0.1:0"},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: *sqliteURL,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: %v\n", err)
		os.Exit(1)
	}
	upstream, err := url.Parse(f.MongoDBURI())
	if err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: %v\n", err)
		os.Exit(1)
	}
	logger.Info("relaying to FerretDB", slog.String("listen", ln.Addr().String()), slog.String("ferretdb", upstream.Host))

	// Adds the indexes FerretDB's lookups by _id and the read paths need (internal/index), starting below:
	// New has opened the existing databases, and the first pass runs while Run starts listening.
	indexed := make(chan struct{})
	indexer, err := index.New(*sqliteURL, paths.IndexKinds(), logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: %v\n", err)
		os.Exit(1)
	}

	ferretCtx, stopFerret := context.WithCancel(context.Background())
	defer stopFerret()

	relayed := make(chan struct{})
	go func() {
		defer close(relayed)
		defer stopFerret()
		newRelay(upstream.Host, paths.NewReader(indexer, logger), logger).serve(ctx, ln)
	}()

	if indexer != nil {
		go func() {
			defer close(indexed)
			indexer.Run(ctx)
		}()
	} else {
		close(indexed)
	}

	runErr := f.Run(ferretCtx)

	// Run only returns early on error; either way no connection of ours outlives the process' main.
	stop()
	<-relayed
	<-indexed

	if runErr != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: %v\n", runErr)
		os.Exit(1)
	}
}
