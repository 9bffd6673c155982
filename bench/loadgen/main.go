// Command loadgen drives the GPU extender the way kube-scheduler's HTTPExtender does
// (Go net/http over mutual TLS with keep-alive, encoding/json with the real
// k8s.io/kube-scheduler/extender/v1 and k8s.io/api/core/v1 types), and measures what the
// scheduler side pays for JSON.
//
//	loadgen run   -url https://127.0.0.1:PORT -verb filter -body args.json -ca ca.pem -cert c.pem -key k.pem
//	              [-concurrency 4] [-duration 5s] [-count 0] [-warmup 2] [-save-response out.json]
//	loadgen codec -body args.json [-filter-response f.json] [-prioritize-response p.json] [-rounds 7]
//
// Both print one JSON object on stdout. The request body is decoded into ExtenderArgs and
// encoded again with encoding/json once, so the bytes sent are exactly what kube-scheduler
// would send for those objects; "run" then reuses them, so the client spends its CPU on
// TLS and HTTP only and does not starve the server on a small machine.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	extenderv1 "k8s.io/kube-scheduler/extender/v1"
)

// maxSavedErrors bounds how many distinct error messages a run reports.
const maxSavedErrors = 10

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: loadgen run|codec [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "run":
		err = runCommand(os.Args[2:])
	case "codec":
		err = codecCommand(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q (run or codec)", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// schedulerBody decodes a request body into the scheduler's types and encodes it as the scheduler does.
func schedulerBody(path string) ([]byte, *extenderv1.ExtenderArgs, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	var args extenderv1.ExtenderArgs
	if err := json.Unmarshal(raw, &args); err != nil {
		return nil, nil, fmt.Errorf("%s is not ExtenderArgs: %w", path, err)
	}
	out, err := json.Marshal(&args)
	return out, &args, err
}

type runResult struct {
	Verb          string             `json:"verb"`
	Concurrency   int                `json:"concurrency"`
	Requests      int64              `json:"requests"`
	Errors        int64              `json:"errors"`
	ErrorMessages []string           `json:"error_messages"`
	Seconds       float64            `json:"seconds"`
	Throughput    float64            `json:"requests_per_second"`
	LatencyMs     map[string]float64 `json:"latency_ms"`
	RequestBytes  int                `json:"request_bytes"`
	ResponseBytes float64            `json:"response_bytes_mean"`
}

func runCommand(argv []string) error {
	flags := flag.NewFlagSet("run", flag.ExitOnError)
	url := flags.String("url", "", "extender URL prefix, e.g. https://127.0.0.1:8443")
	verb := flags.String("verb", "filter", "filter or prioritize")
	bodyPath := flags.String("body", "", "ExtenderArgs JSON file")
	caFile := flags.String("ca", "", "CA that signed the extender's certificate")
	certFile := flags.String("cert", "", "client certificate")
	keyFile := flags.String("key", "", "client key")
	concurrency := flags.Int("concurrency", 1, "requests in flight at once (one connection each)")
	duration := flags.Duration("duration", 5*time.Second, "how long to send (after the warm-up)")
	count := flags.Int64("count", 0, "stop after this many measured requests (0: duration only)")
	warmup := flags.Int("warmup", 2, "requests per connection sent before measuring")
	timeout := flags.Duration("timeout", 30*time.Second, "client timeout per request (kube-scheduler: httpTimeout)")
	savePath := flags.String("save-response", "", "write the last 200 answer here")
	if err := flags.Parse(argv); err != nil {
		return err
	}
	if *url == "" || *bodyPath == "" || *concurrency < 1 {
		return errors.New("run needs -url, -body and -concurrency >= 1")
	}
	body, _, err := schedulerBody(*bodyPath)
	if err != nil {
		return err
	}
	client, err := mtlsClient(*caFile, *certFile, *keyFile, *concurrency, *timeout)
	if err != nil {
		return err
	}
	target := strings.TrimRight(*url, "/") + "/" + *verb

	var lastAnswer []byte
	var answerMu sync.Mutex
	send := func() (int, error) {
		request, err := http.NewRequest(http.MethodPost, target, bytes.NewReader(body))
		if err != nil {
			return 0, err
		}
		request.Header.Set("Content-Type", "application/json")
		response, err := client.Do(request)
		if err != nil {
			return 0, err
		}
		defer response.Body.Close()
		answer, err := io.ReadAll(response.Body)
		if err != nil {
			return 0, err
		}
		if response.StatusCode != http.StatusOK {
			return 0, fmt.Errorf("status %d: %s", response.StatusCode, strings.TrimSpace(string(answer)))
		}
		if *savePath != "" {
			answerMu.Lock()
			lastAnswer = answer
			answerMu.Unlock()
		}
		return len(answer), nil
	}

	var warm sync.WaitGroup
	warmErrors := make(chan error, *concurrency**warmup+1)
	for worker := 0; worker < *concurrency; worker++ {
		warm.Add(1)
		go func() {
			defer warm.Done()
			for i := 0; i < *warmup; i++ {
				if _, err := send(); err != nil {
					warmErrors <- err
				}
			}
		}()
	}
	warm.Wait()
	close(warmErrors)
	for err := range warmErrors {
		return fmt.Errorf("warm-up request failed: %w", err)
	}

	var (
		issued      atomic.Int64
		failures    atomic.Int64
		mu          sync.Mutex
		latencies   []float64
		answerBytes int64
		messages    = map[string]bool{}
	)
	deadline := time.Now().Add(*duration)
	started := time.Now()
	var workers sync.WaitGroup
	for worker := 0; worker < *concurrency; worker++ {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for time.Now().Before(deadline) {
				if *count > 0 && issued.Add(1) > *count {
					return
				}
				begin := time.Now()
				size, err := send()
				elapsed := time.Since(begin)
				mu.Lock()
				if err != nil {
					failures.Add(1)
					if len(messages) < maxSavedErrors {
						messages[err.Error()] = true
					}
				} else {
					latencies = append(latencies, float64(elapsed.Microseconds())/1000)
					answerBytes += int64(size)
				}
				mu.Unlock()
			}
		}()
	}
	workers.Wait()
	seconds := time.Since(started).Seconds()

	result := runResult{
		Verb:          *verb,
		Concurrency:   *concurrency,
		Requests:      int64(len(latencies)) + failures.Load(),
		Errors:        failures.Load(),
		ErrorMessages: sortedKeys(messages),
		Seconds:       seconds,
		Throughput:    float64(len(latencies)) / seconds,
		LatencyMs:     percentiles(latencies),
		RequestBytes:  len(body),
	}
	if len(latencies) > 0 {
		result.ResponseBytes = float64(answerBytes) / float64(len(latencies))
	}
	if *savePath != "" && lastAnswer != nil {
		if err := os.WriteFile(*savePath, lastAnswer, 0o600); err != nil {
			return err
		}
	}
	return json.NewEncoder(os.Stdout).Encode(result)
}

func mtlsClient(caFile, certFile, keyFile string, connections int, timeout time.Duration) (*http.Client, error) {
	caPEM, err := os.ReadFile(caFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("%s holds no certificate", caFile)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		MaxIdleConnsPerHost: connections, // keep-alive for every worker (the scheduler sends one at a time)
		IdleConnTimeout:     90 * time.Second,
	}
	return &http.Client{Transport: transport, Timeout: timeout}, nil
}

func percentiles(samples []float64) map[string]float64 {
	out := map[string]float64{}
	if len(samples) == 0 {
		return out
	}
	sorted := append([]float64(nil), samples...)
	sort.Float64s(sorted)
	at := func(q float64) float64 {
		index := int(q*float64(len(sorted)-1) + 0.5)
		return sorted[index]
	}
	out["p50"], out["p90"], out["p99"] = at(0.50), at(0.90), at(0.99)
	out["min"], out["max"] = sorted[0], sorted[len(sorted)-1]
	return out
}

func sortedKeys(set map[string]bool) []string {
	keys := make([]string, 0, len(set))
	for key := range set {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	return keys
}

type codecResult struct {
	Nodes               int     `json:"nodes"`
	RequestBytes        int     `json:"request_bytes"`
	MarshalArgsMs       float64 `json:"marshal_args_ms"`
	DecodeFilterMs      float64 `json:"decode_filter_result_ms,omitempty"`
	FilterResultBytes   int     `json:"filter_result_bytes,omitempty"`
	FilterResultNodes   int     `json:"filter_result_nodes,omitempty"`
	DecodePrioritizeMs  float64 `json:"decode_prioritize_result_ms,omitempty"`
	PrioritizeBytes     int     `json:"prioritize_result_bytes,omitempty"`
	PrioritizeHostCount int     `json:"prioritize_hosts,omitempty"`
}

// codecCommand times what kube-scheduler's HTTPExtender.send spends in encoding/json:
// json.Marshal of the ExtenderArgs and json.NewDecoder(...).Decode of each answer.
func codecCommand(argv []string) error {
	flags := flag.NewFlagSet("codec", flag.ExitOnError)
	bodyPath := flags.String("body", "", "ExtenderArgs JSON file")
	filterPath := flags.String("filter-response", "", "an ExtenderFilterResult the extender answered")
	prioritizePath := flags.String("prioritize-response", "", "a HostPriorityList the extender answered")
	rounds := flags.Int("rounds", 7, "timings per figure; the median is reported")
	if err := flags.Parse(argv); err != nil {
		return err
	}
	body, args, err := schedulerBody(*bodyPath)
	if err != nil {
		return err
	}
	result := codecResult{RequestBytes: len(body)}
	if args.Nodes != nil {
		result.Nodes = len(args.Nodes.Items)
	}
	result.MarshalArgsMs = medianMs(*rounds, func() error {
		_, err := json.Marshal(args)
		return err
	})
	if *filterPath != "" {
		answer, err := os.ReadFile(*filterPath)
		if err != nil {
			return err
		}
		var decoded extenderv1.ExtenderFilterResult
		result.FilterResultBytes = len(answer)
		result.DecodeFilterMs = medianMs(*rounds, func() error {
			decoded = extenderv1.ExtenderFilterResult{}
			return json.NewDecoder(bytes.NewReader(answer)).Decode(&decoded)
		})
		if decoded.Nodes != nil {
			result.FilterResultNodes = len(decoded.Nodes.Items)
		}
	}
	if *prioritizePath != "" {
		answer, err := os.ReadFile(*prioritizePath)
		if err != nil {
			return err
		}
		var decoded extenderv1.HostPriorityList
		result.PrioritizeBytes = len(answer)
		result.DecodePrioritizeMs = medianMs(*rounds, func() error {
			decoded = nil
			return json.NewDecoder(bytes.NewReader(answer)).Decode(&decoded)
		})
		result.PrioritizeHostCount = len(decoded)
	}
	return json.NewEncoder(os.Stdout).Encode(result)
}

func medianMs(rounds int, work func() error) float64 {
	samples := make([]float64, 0, rounds)
	for i := 0; i < rounds; i++ {
		begin := time.Now()
		if err := work(); err != nil {
			fmt.Fprintln(os.Stderr, "loadgen codec:", err)
			os.Exit(1)
		}
		samples = append(samples, float64(time.Since(begin).Microseconds())/1000)
	}
	return percentiles(samples)["p50"]
}
