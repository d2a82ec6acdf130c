// Command ferretdb runs FerretDB v1.24.2 on SQLite for the local stack and the test suites.
//
// It wraps FerretDB's embeddable package instead of building upstream cmd/ferretdb because the
// published module lacks build/version/version.txt, which makes that binary panic at start.
//
// It also adds the index FerretDB's lookups by _id need but do not get on SQLite (see idindex.go).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
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

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *listenAddr},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: *sqliteURL,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: %v\n", err)
		os.Exit(1)
	}

	// Run returns once the context is cancelled, after closing the listener and the SQLite backend,
	// so SIGINT/SIGTERM give a clean shutdown with the data flushed.
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	// Adds the index FerretDB's lookups by _id need but do not get (see idindex.go), starting now:
	// New has opened the existing databases, and the first pass runs while Run starts listening.
	indexed := make(chan struct{})
	indexer, err := newIDIndexer(*sqliteURL, logger)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: %v\n", err)
		os.Exit(1)
	}
	if indexer != nil {
		go func() {
			defer close(indexed)
			indexer.run(ctx)
		}()
	} else {
		close(indexed)
	}

	runErr := f.Run(ctx)

	// Run only returns early on error; either way no connection of ours outlives the process' main.
	stop()
	<-indexed

	if runErr != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: %v\n", runErr)
		os.Exit(1)
	}
}
