// Package onvif is an ONVIF client: WS-Discovery probes (discovery.go), the Device and Media
// services' GetCapabilities, GetProfiles and GetStreamUri (device.go) and the Event service's
// PullPoint subscription (events.go), over SOAP 1.2 with a WS-Security UsernameToken (password
// digest, OASIS WSS UsernameToken Profile 1.0 §3.1; ONVIF Core Specification §5.9.4).
//
// Every request has a timeout and every reply a size bound; addresses a device reports
// (service XAddrs, stream URIs, subscription references) are held to the host the client was
// given (devices behind NAT report addresses of their own network; a hostile one could name
// any), and HTTP redirects are not followed. Credentials never appear in errors.
package onvif

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Errors.
var (
	// ErrAuth is returned when the device refuses the credentials (HTTP 401, or a SOAP fault
	// with the subcode ter:NotAuthorized).
	ErrAuth = errors.New("onvif: the device refused the credentials")
	// ErrFault wraps a SOAP fault's reason.
	ErrFault = errors.New("onvif: SOAP fault")
	// ErrReply is returned for a reply that is not the expected SOAP message.
	ErrReply = errors.New("onvif: unexpected reply")
	// ErrAddress is returned for an address that is not http(s)://host[:port]/path.
	ErrAddress = errors.New("onvif: device address must be http://host[:port]/path or https://")
)

// MaxReply bounds a SOAP reply's size in bytes.
const MaxReply = 1 << 20

// DefaultTimeout bounds one request when the client sets none.
const DefaultTimeout = 10 * time.Second

// Namespaces.
const (
	nsSOAP  = "http://www.w3.org/2003/05/soap-envelope"
	nsWSSE  = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"
	nsWSU   = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"
	nsWSA   = "http://www.w3.org/2005/08/addressing"
	nsTDS   = "http://www.onvif.org/ver10/device/wsdl"
	nsTRT   = "http://www.onvif.org/ver10/media/wsdl"
	nsTT    = "http://www.onvif.org/ver10/schema"
	nsTEV   = "http://www.onvif.org/ver10/events/wsdl"
	nsWSNT  = "http://docs.oasis-open.org/wsn/b-2"
	typePD  = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordDigest"
	typeB64 = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary"
)

// Digest returns the UsernameToken password digest: Base64(SHA-1(nonce + created + password)),
// nonce raw bytes, created as sent (UTC, RFC 3339).
func Digest(nonce []byte, created, password string) string {
	h := sha1.New()
	h.Write(nonce)
	h.Write([]byte(created))
	h.Write([]byte(password))
	return base64.StdEncoding.EncodeToString(h.Sum(nil))
}

// security returns the WS-Security header with a fresh nonce, or "" without a user.
func security(user, pass string, now time.Time) string {
	if user == "" {
		return ""
	}
	nonce := make([]byte, 16)
	rand.Read(nonce)
	created := now.UTC().Format("2006-01-02T15:04:05.000Z")
	var b strings.Builder
	b.WriteString(`<wsse:Security s:mustUnderstand="1" xmlns:wsse="` + nsWSSE + `" xmlns:wsu="` + nsWSU + `"><wsse:UsernameToken><wsse:Username>`)
	xml.EscapeText(&b, []byte(user))
	b.WriteString(`</wsse:Username><wsse:Password Type="` + typePD + `">` + Digest(nonce, created, pass) +
		`</wsse:Password><wsse:Nonce EncodingType="` + typeB64 + `">` + base64.StdEncoding.EncodeToString(nonce) +
		`</wsse:Nonce><wsu:Created>` + created + `</wsu:Created></wsse:UsernameToken></wsse:Security>`)
	return b.String()
}

// envelope wraps body (XML declaring its own namespaces) with header entries.
func envelope(header, body string) []byte {
	return []byte(`<?xml version="1.0" encoding="UTF-8"?><s:Envelope xmlns:s="` + nsSOAP + `"><s:Header>` + header +
		`</s:Header><s:Body>` + body + `</s:Body></s:Envelope>`)
}

// fault is a SOAP 1.2 fault.
type fault struct {
	Code struct {
		Value   string `xml:"Value"`
		Subcode struct {
			Value   string `xml:"Value"`
			Subcode struct {
				Value string `xml:"Value"`
			} `xml:"Subcode"`
		} `xml:"Subcode"`
	} `xml:"Code"`
	Reason struct {
		Text string `xml:"Text"`
	} `xml:"Reason"`
}

// call posts body to addr with the credentials and decodes the reply's body into out (a
// struct for the SOAP Body's content).
func (c *Client) call(ctx context.Context, addr, action, body string, out any) error {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	hdr := ""
	if !c.anonymous {
		hdr = security(c.User, c.Password, c.now().Add(c.skew))
	}
	if c.addressing {
		hdr += `<wsa:To xmlns:wsa="` + nsWSA + `">` + xmlText(addr) + `</wsa:To><wsa:Action xmlns:wsa="` + nsWSA + `">` + action + `</wsa:Action>`
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, addr, bytes.NewReader(envelope(hdr, body)))
	if err != nil {
		return ErrAddress
	}
	req.Header.Set("Content-Type", `application/soap+xml; charset=utf-8; action="`+action+`"`)
	var hc http.Client // a copy: the caller's, or the default, that never follows a redirect
	if c.HTTP != nil {
		hc = *c.HTTP
	}
	hc.CheckRedirect = noRedirect
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("onvif: %s: %w", opName(action), unwrapURL(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxReply+1))
	if err != nil {
		return fmt.Errorf("onvif: %s: reading the reply: %w", opName(action), unwrapURL(err))
	}
	if len(raw) > MaxReply {
		return fmt.Errorf("%w: %s: reply over %d bytes", ErrReply, opName(action), MaxReply)
	}
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		return fmt.Errorf("%w: %s: HTTP %d: redirects are not followed", ErrReply, opName(action), resp.StatusCode)
	}
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("%w (%s: HTTP 401)", ErrAuth, opName(action))
	}
	var env struct {
		Body struct {
			Fault   *fault `xml:"Fault"`
			Content []byte `xml:",innerxml"`
		} `xml:"Body"`
	}
	if err := xml.Unmarshal(raw, &env); err != nil {
		return fmt.Errorf("%w: %s: HTTP %d, not SOAP: %v", ErrReply, opName(action), resp.StatusCode, err)
	}
	if f := env.Body.Fault; f != nil {
		sub := f.Code.Subcode.Value + " " + f.Code.Subcode.Subcode.Value
		if strings.Contains(sub, "NotAuthorized") || strings.Contains(sub, "FailedAuthentication") {
			return fmt.Errorf("%w (%s: %s)", ErrAuth, opName(action), strings.TrimSpace(f.Reason.Text))
		}
		return fmt.Errorf("%w: %s: %s %s", ErrFault, opName(action), strings.TrimSpace(sub), strings.TrimSpace(f.Reason.Text))
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%w: %s: HTTP %d", ErrReply, opName(action), resp.StatusCode)
	}
	content := append(append([]byte("<Body>"), env.Body.Content...), "</Body>"...) // out's paths start at the response element
	if err := xml.Unmarshal(content, out); err != nil {
		return fmt.Errorf("%w: %s: %v", ErrReply, opName(action), err)
	}
	return nil
}

// noRedirect keeps a redirect's answer: a device could otherwise send the request (307 and
// 308 resend the body, with its UsernameToken) to any host, past Confine.
func noRedirect(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// opName is an action URI's last segment (GetProfiles).
func opName(action string) string { return action[strings.LastIndexByte(action, '/')+1:] }

// unwrapURL drops net/http's *url.Error wrapping, which quotes the URL.
func unwrapURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

func xmlText(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
