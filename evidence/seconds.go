package evidence

import "time"

// seconds is d in seconds as the float64 nearest its nanoseconds' decimal, the value events print
// (6.56; d.Seconds() adds two float64s and gives 6.5600000000000005).
func seconds(d time.Duration) float64 { return float64(d) / 1e9 }
