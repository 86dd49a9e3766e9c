// Package onvifsim is an ONVIF camera simulated for tests, written from the specification's
// messages (ONVIF Core and Media Service specifications' examples, WS-Discovery 2005/04,
// WS-Security UsernameToken Profile 1.0), not with an ONVIF library: a device, media and
// event service over HTTP that checks every request's UsernameToken digest (nonces used once,
// Created within 5 minutes), a WS-Discovery responder (discovery.go) and an RTSP server
// serving a clip (rtsp.go). Tests only.
package onvifsim

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/xml"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Profile is a media profile the device offers.
type Profile struct {
	Token, Name   string
	Width, Height int
	// Path is the RTSP path GetStreamUri answers for it (on the RTSP server's address).
	Path string
}

// Device is a simulated camera's SOAP services.
type Device struct {
	// User and Password are the only credentials accepted.
	User, Password string
	Profiles       []Profile
	// RTSPAddr is host:port of the RTSP server the stream URIs name; ReportHost, when set,
	// replaces the host in every address the device reports (a camera behind NAT).
	RTSPAddr   string
	ReportHost string
	// Endpoint is its WS-Discovery endpoint reference (urn:uuid:…); Name its name scope.
	Endpoint, Name string
	// Clock is the device's clock offset from the machine's (a camera without NTP): tokens
	// must be Created within 5 minutes of it; GetSystemDateAndTime tells it.
	Clock time.Duration

	addr   string
	srv    *http.Server
	mu     sync.Mutex
	nonces map[string]bool
	queue  []notification
	wake   chan struct{}
	subs   map[string]bool

	// Requests counts SOAP requests by operation; Refused those refused for credentials.
	Requests sync.Map
	Refused  atomic.Int64
}

type notification struct {
	topic, source, item string
	on                  bool
	at                  time.Time
}

// Start serves the device on a loopback port until the test ends.
func (d *Device) Start(t testing.TB) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	d.addr = l.Addr().String()
	d.nonces, d.subs, d.wake = map[string]bool{}, map[string]bool{}, make(chan struct{}, 1)
	if d.Endpoint == "" {
		d.Endpoint = fmt.Sprintf("urn:uuid:5f5a69c2-e0ae-504f-829b-%012x", time.Now().UnixNano()&0xffffffffffff)
	}
	d.srv = &http.Server{Handler: http.HandlerFunc(d.serve), ReadHeaderTimeout: 10 * time.Second}
	go d.srv.Serve(l)
	t.Cleanup(func() { d.srv.Close() })
}

// XAddr is the device service's address.
func (d *Device) XAddr() string { return "http://" + d.addr + "/onvif/device_service" }

// Addr is the HTTP server's host:port.
func (d *Device) Addr() string { return d.addr }

// Motion queues a cell motion event (tns1:RuleEngine/CellMotionDetector/Motion, IsMotion on)
// for the pull points.
func (d *Device) Motion(on bool) {
	d.Event("tns1:RuleEngine/CellMotionDetector/Motion", "IsMotion", on)
}

// Event queues a notification on topic whose data is the boolean SimpleItem item.
func (d *Device) Event(topic, item string, on bool) {
	d.mu.Lock()
	d.queue = append(d.queue, notification{topic: topic, source: "VideoSourceToken", item: item, on: on, at: time.Now()})
	d.mu.Unlock()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Count returns how many requests of operation op were served.
func (d *Device) Count(op string) int64 {
	v, _ := d.Requests.Load(op)
	if v == nil {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

// reported returns host:port as the device reports it.
func (d *Device) reported(hostport string) string {
	if d.ReportHost == "" {
		return hostport
	}
	_, port, _ := net.SplitHostPort(hostport)
	return net.JoinHostPort(d.ReportHost, port)
}

// envelope is what the device reads of a request.
type envelope struct {
	Header struct {
		Security struct {
			Username string `xml:"UsernameToken>Username"`
			Password struct {
				Type  string `xml:"Type,attr"`
				Value string `xml:",chardata"`
			} `xml:"UsernameToken>Password"`
			Nonce   string `xml:"UsernameToken>Nonce"`
			Created string `xml:"UsernameToken>Created"`
		} `xml:"Security"`
	} `xml:"Header"`
	Body struct {
		Inner []byte `xml:",innerxml"`
		First struct {
			XMLName xml.Name
		} `xml:",any"`
	} `xml:"Body"`
}

func (d *Device) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	var env envelope
	if r.Method != http.MethodPost || xml.Unmarshal(body, &env) != nil {
		d.fault(w, http.StatusBadRequest, "env:Sender", "ter:WellFormed", "not a SOAP envelope")
		return
	}
	op := env.Body.First.XMLName.Local
	v, _ := d.Requests.LoadOrStore(op, new(atomic.Int64))
	v.(*atomic.Int64).Add(1)
	if op == "GetSystemDateAndTime" { // answered without credentials (ONVIF Core §5.9.4.2)
		now := time.Now().Add(d.Clock).UTC()
		d.reply(w, fmt.Sprintf(`<tds:GetSystemDateAndTimeResponse><tds:SystemDateAndTime><tt:DateTimeType>NTP</tt:DateTimeType>`+
			`<tt:DaylightSavings>false</tt:DaylightSavings><tt:TimeZone><tt:TZ>UTC0</tt:TZ></tt:TimeZone><tt:UTCDateTime>`+
			`<tt:Time><tt:Hour>%d</tt:Hour><tt:Minute>%d</tt:Minute><tt:Second>%d</tt:Second></tt:Time>`+
			`<tt:Date><tt:Year>%d</tt:Year><tt:Month>%d</tt:Month><tt:Day>%d</tt:Day></tt:Date></tt:UTCDateTime>`+
			`</tds:SystemDateAndTime></tds:GetSystemDateAndTimeResponse>`, now.Hour(), now.Minute(), now.Second(), now.Year(), int(now.Month()), now.Day()))
		return
	}
	if !d.authorized(&env) {
		d.Refused.Add(1)
		d.fault(w, http.StatusBadRequest, "env:Sender", "ter:NotAuthorized", "Sender not Authorized")
		return
	}
	host := d.reported(d.addr)
	switch op {
	case "GetCapabilities":
		d.reply(w, `<tds:GetCapabilitiesResponse><tds:Capabilities>`+
			`<tt:Device><tt:XAddr>http://`+host+`/onvif/device_service</tt:XAddr></tt:Device>`+
			`<tt:Events><tt:XAddr>http://`+host+`/onvif/events_service</tt:XAddr><tt:WSSubscriptionPolicySupport>true</tt:WSSubscriptionPolicySupport>`+
			`<tt:WSPullPointSupport>true</tt:WSPullPointSupport><tt:WSPausableSubscriptionManagerInterfaceSupport>false</tt:WSPausableSubscriptionManagerInterfaceSupport></tt:Events>`+
			`<tt:Media><tt:XAddr>http://`+host+`/onvif/media_service</tt:XAddr><tt:StreamingCapabilities><tt:RTPMulticast>false</tt:RTPMulticast>`+
			`<tt:RTP_TCP>true</tt:RTP_TCP><tt:RTP_RTSP_TCP>true</tt:RTP_RTSP_TCP></tt:StreamingCapabilities></tt:Media>`+
			`</tds:Capabilities></tds:GetCapabilitiesResponse>`)
	case "GetProfiles":
		var b strings.Builder
		b.WriteString(`<trt:GetProfilesResponse>`)
		for _, p := range d.Profiles {
			fmt.Fprintf(&b, `<trt:Profiles token="%s" fixed="true"><tt:Name>%s</tt:Name>`+
				`<tt:VideoSourceConfiguration token="VideoSourceConfigToken"><tt:Name>VideoSourceConfig</tt:Name><tt:UseCount>2</tt:UseCount>`+
				`<tt:SourceToken>VideoSourceToken</tt:SourceToken><tt:Bounds x="0" y="0" width="%d" height="%d"/></tt:VideoSourceConfiguration>`+
				`<tt:VideoEncoderConfiguration token="VideoEncoderToken_%s"><tt:Name>VideoEncoder</tt:Name><tt:UseCount>1</tt:UseCount>`+
				`<tt:Encoding>H264</tt:Encoding><tt:Resolution><tt:Width>%d</tt:Width><tt:Height>%d</tt:Height></tt:Resolution>`+
				`<tt:Quality>5</tt:Quality><tt:RateControl><tt:FrameRateLimit>25</tt:FrameRateLimit><tt:EncodingInterval>1</tt:EncodingInterval>`+
				`<tt:BitrateLimit>2048</tt:BitrateLimit></tt:RateControl></tt:VideoEncoderConfiguration></trt:Profiles>`,
				esc(p.Token), esc(p.Name), p.Width, p.Height, esc(p.Token), p.Width, p.Height)
		}
		b.WriteString(`</trt:GetProfilesResponse>`)
		d.reply(w, b.String())
	case "GetStreamUri":
		var req struct {
			Token string `xml:"GetStreamUri>ProfileToken"`
		}
		xml.Unmarshal(append(append([]byte("<b>"), env.Body.Inner...), "</b>"...), &req)
		for _, p := range d.Profiles {
			if p.Token == strings.TrimSpace(req.Token) {
				d.reply(w, `<trt:GetStreamUriResponse><trt:MediaUri><tt:Uri>rtsp://`+d.reported(d.RTSPAddr)+"/"+esc(p.Path)+`</tt:Uri>`+
					`<tt:InvalidAfterConnect>false</tt:InvalidAfterConnect><tt:InvalidAfterReboot>false</tt:InvalidAfterReboot>`+
					`<tt:Timeout>PT0S</tt:Timeout></trt:MediaUri></trt:GetStreamUriResponse>`)
				return
			}
		}
		d.fault(w, http.StatusBadRequest, "env:Sender", "ter:InvalidArgVal/ter:NoProfile", "the requested profile token does not exist")
	case "CreatePullPointSubscription":
		d.mu.Lock()
		id := fmt.Sprintf("%d", len(d.subs)+1)
		d.subs[id] = true
		d.mu.Unlock()
		now := time.Now().UTC()
		d.reply(w, `<tev:CreatePullPointSubscriptionResponse><tev:SubscriptionReference><wsa5:Address>http://`+host+`/onvif/pullpoint/`+id+
			`</wsa5:Address></tev:SubscriptionReference><wsnt:CurrentTime>`+now.Format(time.RFC3339)+`</wsnt:CurrentTime>`+
			`<wsnt:TerminationTime>`+now.Add(time.Minute).Format(time.RFC3339)+`</wsnt:TerminationTime></tev:CreatePullPointSubscriptionResponse>`)
	case "PullMessages":
		d.pull(w, r, &env)
	case "Unsubscribe":
		d.mu.Lock()
		delete(d.subs, strings.TrimPrefix(r.URL.Path, "/onvif/pullpoint/"))
		d.mu.Unlock()
		d.reply(w, `<wsnt:UnsubscribeResponse/>`)
	case "Renew":
		now := time.Now().UTC()
		d.reply(w, `<wsnt:RenewResponse><wsnt:TerminationTime>`+now.Add(time.Minute).Format(time.RFC3339)+
			`</wsnt:TerminationTime><wsnt:CurrentTime>`+now.Format(time.RFC3339)+`</wsnt:CurrentTime></wsnt:RenewResponse>`)
	default:
		d.fault(w, http.StatusBadRequest, "env:Receiver", "ter:ActionNotSupported", "not supported: "+op)
	}
}

// pull answers PullMessages with the queued notifications, waiting up to its Timeout (at most
// 5 s here) for one.
func (d *Device) pull(w http.ResponseWriter, r *http.Request, env *envelope) {
	d.mu.Lock()
	ok := d.subs[strings.TrimPrefix(r.URL.Path, "/onvif/pullpoint/")]
	d.mu.Unlock()
	if !ok {
		d.fault(w, http.StatusBadRequest, "env:Sender", "ter:InvalidArgVal", "no such subscription")
		return
	}
	deadline := time.NewTimer(5 * time.Second)
	defer deadline.Stop()
	var got []notification
	for {
		d.mu.Lock()
		got, d.queue = d.queue, nil
		d.mu.Unlock()
		if len(got) > 0 {
			break
		}
		select {
		case <-d.wake:
			continue
		case <-deadline.C:
		case <-r.Context().Done():
		}
		break
	}
	now := time.Now().UTC()
	var b strings.Builder
	b.WriteString(`<tev:PullMessagesResponse><tev:CurrentTime>` + now.Format(time.RFC3339) + `</tev:CurrentTime><tev:TerminationTime>` +
		now.Add(time.Minute).Format(time.RFC3339) + `</tev:TerminationTime>`)
	for _, n := range got {
		fmt.Fprintf(&b, `<wsnt:NotificationMessage><wsnt:Topic Dialect="http://www.onvif.org/ver10/tev/topicExpression/ConcreteSet">%s</wsnt:Topic>`+
			`<wsnt:Message><tt:Message UtcTime="%s" PropertyOperation="Changed"><tt:Source>`+
			`<tt:SimpleItem Name="VideoSourceConfigurationToken" Value="%s"/><tt:SimpleItem Name="Rule" Value="MyMotionDetectorRule"/></tt:Source>`+
			`<tt:Data><tt:SimpleItem Name="%s" Value="%t"/></tt:Data></tt:Message></wsnt:Message></wsnt:NotificationMessage>`,
			n.topic, n.at.UTC().Format(time.RFC3339), n.source, esc(n.item), n.on)
	}
	b.WriteString(`</tev:PullMessagesResponse>`)
	d.reply(w, b.String())
}

// authorized checks the UsernameToken: the user, the digest of nonce, created and the
// password, a nonce not seen before and a Created within 5 minutes of the device's clock.
func (d *Device) authorized(env *envelope) bool {
	s := &env.Header.Security
	if s.Username != d.User || !strings.HasSuffix(s.Password.Type, "#PasswordDigest") {
		return false
	}
	nonce, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s.Nonce))
	if err != nil || len(nonce) == 0 {
		return false
	}
	created, err := time.Parse(time.RFC3339Nano, strings.TrimSpace(s.Created))
	if err != nil || time.Now().Add(d.Clock).Sub(created).Abs() > 5*time.Minute {
		return false
	}
	h := sha1.New()
	h.Write(nonce)
	h.Write([]byte(strings.TrimSpace(s.Created)))
	h.Write([]byte(d.Password))
	if base64.StdEncoding.EncodeToString(h.Sum(nil)) != strings.TrimSpace(s.Password.Value) {
		return false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.nonces[s.Nonce] {
		return false
	}
	d.nonces[s.Nonce] = true
	return true
}

const namespaces = `xmlns:env="http://www.w3.org/2003/05/soap-envelope" xmlns:tds="http://www.onvif.org/ver10/device/wsdl" ` +
	`xmlns:trt="http://www.onvif.org/ver10/media/wsdl" xmlns:tt="http://www.onvif.org/ver10/schema" ` +
	`xmlns:tev="http://www.onvif.org/ver10/events/wsdl" xmlns:wsnt="http://docs.oasis-open.org/wsn/b-2" ` +
	`xmlns:wsa5="http://www.w3.org/2005/08/addressing" xmlns:ter="http://www.onvif.org/ver10/error" ` +
	`xmlns:tns1="http://www.onvif.org/ver10/topics"`

func (d *Device) reply(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "application/soap+xml; charset=utf-8")
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="UTF-8"?><env:Envelope ` + namespaces + `><env:Body>` + body + `</env:Body></env:Envelope>`)
	w.Write(b.Bytes())
}

// fault answers a SOAP 1.2 fault (ONVIF Core §5.11.2).
func (d *Device) fault(w http.ResponseWriter, status int, code, subcode, reason string) {
	w.Header().Set("Content-Type", "application/soap+xml; charset=utf-8")
	w.WriteHeader(status)
	sub := ""
	for _, s := range strings.Split(subcode, "/") {
		sub += `<env:Subcode><env:Value>` + s + `</env:Value>`
	}
	sub += strings.Repeat(`</env:Subcode>`, len(strings.Split(subcode, "/")))
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><env:Envelope %s><env:Body><env:Fault><env:Code><env:Value>%s</env:Value>%s</env:Code>`+
		`<env:Reason><env:Text xml:lang="en">%s</env:Text></env:Reason></env:Fault></env:Body></env:Envelope>`, namespaces, code, sub, esc(reason))
}

func esc(s string) string {
	var b strings.Builder
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
