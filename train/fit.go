package train

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// lossFunc adds one row's loss (weighted binary cross-entropy, or with
// Settings.Quantile the quantile loss, summed over the slots) and, when
// grad is not nil, its gradient (the trunk's parameters, then logAlpha).
type lossFunc func(p *processor, d *dataset, r int, s Settings, c *trunkCache, grad []float64) float64

// capacityLoss: output k = sigmoid(alpha (1 - m a - sqrt(m) b)), m = k+1,
// against "m replicas fit" (or, with Settings.Quantile, the quantile loss).
func capacityLoss(p *processor, d *dataset, r int, s Settings, c *trunkCache, grad []float64) float64 {
	if s.Quantile > 0 {
		return capacityQuantileLoss(p, d, r, s, c, grad)
	}
	c.u = d.useRow(r)
	a, b := p.tr.eval(c.u, c)
	alpha := p.alpha()
	var loss, da, db, dAlpha float64
	for k := 0; k < s.Slots; k++ {
		m := float64(k + 1)
		sm := math.Sqrt(m)
		cost := m*a + sm*b
		l, dz := slotTerm(alpha, cost, d.capacityLabel(r, k), s.OverloadWeight)
		loss += l
		da += dz * -alpha * m
		db += dz * -alpha * sm
		dAlpha += dz * alpha * (1 - cost)
	}
	if grad != nil {
		p.tr.backward(c, da, db, grad)
		grad[len(grad)-1] += dAlpha
	}
	return loss
}

// slotTerm is one slot's weighted cross-entropy for q = sigmoid(alpha (1 -
// cost)) against label y (overload labels, y = 0, weigh overloadWeight),
// and its derivative with respect to alpha (1 - cost).
func slotTerm(alpha, cost, y, overloadWeight float64) (loss, dz float64) {
	q := sigmoid(alpha * (1 - cost))
	w := 1.0
	if y == 0 {
		w = overloadWeight
	}
	return w * bce(q, y), w * (q - y)
}

// admissionLoss: slot k = sigmoid(alpha (1 - C_k)) with C_k the sum over
// slots i <= k of a running replica's a + (sqrt(i+1) - sqrt(i)) b and a new
// one's larger of its demand and that same figure (at least one replica
// runs in every row: a new replica of an observed workload costs at least
// what it will once it runs), against "the queue up to k fits".
func admissionLoss(p *processor, d *dataset, r int, s Settings, c *trunkCache, grad []float64) float64 {
	if s.Quantile > 0 {
		return admissionQuantileLoss(p, d, r, s, c, grad)
	}
	c.u = d.useRow(r)
	a, b := p.tr.eval(c.u, c)
	alpha := p.alpha()
	n := d.running[r]
	var loss, da, db, dAlpha float64
	var q queueCost
	for k := 0; k < s.Slots; k++ {
		cost, dCostA, dCostB := q.add(k, n, a, b, d.demand[r])
		l, dz := slotTerm(alpha, cost, d.admissionLabel(r, k), s.OverloadWeight)
		loss += l
		da += dz * -alpha * dCostA
		db += dz * -alpha * dCostB
		dAlpha += dz * alpha * (1 - cost)
	}
	if grad != nil {
		p.tr.backward(c, da, db, grad)
		grad[len(grad)-1] += dAlpha
	}
	return loss
}

// queueCost accumulates an admission row's queue cost C_k over its slots
// k = 0, 1, ... (see admissionLoss), and its derivatives with respect to
// a and b.
type queueCost struct{ cost, dA, dB float64 }

// add adds slot k of a queue whose first n slots run, new replicas
// demanding demand, and returns C_k and its derivatives.
func (q *queueCost) add(k, n int, a, b, demand float64) (cost, dA, dB float64) {
	step := math.Sqrt(float64(k+1)) - math.Sqrt(float64(k))
	run := a + step*b
	if k < n || run > demand {
		q.cost += run
		q.dA++
		q.dB += step
	} else {
		q.cost += demand
	}
	return q.cost, q.dA, q.dB
}

func meanLoss(p *processor, d *dataset, s Settings, lossFn lossFunc) float64 {
	if d.rows == 0 {
		return math.NaN()
	}
	var c trunkCache
	var sum float64
	for r := 0; r < d.rows; r++ {
		sum += lossFn(p, d, r, s, &c, nil)
	}
	return sum / float64(d.rows*s.Slots)
}

// fitResult is what training measured.
type fitResult struct {
	// trainLoss is the kept weights' mean loss on the training set;
	// valLoss the one early stopping kept them for (on the validation
	// set, or without one the epoch's running training loss).
	trainLoss, valLoss float64
	bestEpoch, epochs  int
	// restart is the start kept (0-based); valLosses every start's best
	// validation loss, in start order.
	restart   int
	valLosses []float64
	// starts: every start's best epoch and epochs run, in start order
	// (the averaged processor has no epochs of its own).
	startBest, startRun []int
}

// startEpochs writes every start's best epoch and epochs run.
func (f fitResult) startEpochs() (best, run string) {
	b, r := make([]string, len(f.startBest)), make([]string, len(f.startRun))
	for i := range f.startBest {
		b[i], r[i] = strconv.Itoa(f.startBest[i]), strconv.Itoa(f.startRun[i])
	}
	return strings.Join(b, " "), strings.Join(r, " ")
}

func (f fitResult) restartLosses() string {
	out := make([]string, len(f.valLosses))
	for i, l := range f.valLosses {
		out[i] = strconv.FormatFloat(l, 'f', 5, 64)
	}
	return strings.Join(out, " ")
}

// fitRestarts trains a processor s.Restarts times and keeps the start with
// the lowest validation loss (the first on a tie), or s.Average times and
// keeps their mean (averageTrunks; its losses are the mean's, and
// valLosses the starts'). The first start draws
// its initial weights and batch order from rng, as a single run does; each
// further start i from its own stream seeded by (s.Seed, name, i), so a
// start's result does not depend on how many there are. The starts run in
// parallel, one per CPU (only the first reads rng).
func fitRestarts(newTrunk func(*rand.Rand) trunk, train, val *dataset, s Settings, rng *rand.Rand, lossFn lossFunc, name string, progress func(Progress)) (*processor, fitResult, error) {
	type run struct {
		p   *processor
		res fitResult
		err error
	}
	starts := s.Restarts
	if s.Average > 1 {
		starts = s.Average
	}
	runs := make([]run, starts)
	var mu sync.Mutex
	report := func(i int) func(Progress) {
		if progress == nil || starts == 1 {
			return progress
		}
		return func(p Progress) {
			mu.Lock()
			defer mu.Unlock()
			p.Model = fmt.Sprintf("%s %d/%d", name, i+1, starts)
			progress(p)
		}
	}
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))
	for i := 0; i < starts; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			r := rng // the first start: a single run's stream
			if i > 0 {
				h := fnv.New64a()
				fmt.Fprintf(h, "%s restart %d", name, i)
				r = rand.New(rand.NewPCG(s.Seed, h.Sum64()))
			}
			p := newProcessor(newTrunk(r))
			res, err := fit(p, train, val, s, r, lossFn, name, report(i))
			runs[i] = run{p, res, err}
		}(i)
	}
	wg.Wait()
	best := 0
	losses := make([]float64, len(runs))
	for i, r := range runs {
		if r.err != nil {
			return nil, r.res, fmt.Errorf("restart %d: %w", i+1, r.err)
		}
		losses[i] = r.res.valLoss
		if r.res.valLoss < runs[best].res.valLoss {
			best = i
		}
	}
	out := runs[best].res
	out.restart, out.valLosses = best, losses
	for _, r := range runs {
		out.startBest, out.startRun = append(out.startBest, r.res.bestEpoch), append(out.startRun, r.res.epochs)
	}
	if s.Average <= 1 {
		return runs[best].p, out, nil
	}
	trunks := make([]trunk, len(runs))
	for i, r := range runs {
		trunks[i] = r.p.tr
	}
	avg, err := averageTrunks(trunks)
	if err != nil {
		return nil, out, fmt.Errorf("train %s: %w", name, err)
	}
	p := newProcessor(avg)
	p.logAlpha = runs[0].p.logAlpha // the quantile loss's fixed slope (Check refuses cross-entropy)
	out.restart = -1
	out.trainLoss = meanLoss(p, train, s, lossFn)
	out.valLoss = out.trainLoss
	if val.rows > 0 {
		out.valLoss = meanLoss(p, val, s, lossFn)
	}
	return p, out, nil
}

// fit trains p with Adam on shuffled mini-batches and a cosine learning
// rate, evaluating the validation set after every epoch and keeping the
// parameters of the best one (early stopping after Patience epochs without
// improvement).
func fit(p *processor, train, val *dataset, s Settings, rng *rand.Rand, lossFn lossFunc, name string, progress func(Progress)) (fitResult, error) {
	perm := make([]int, train.rows)
	for i := range perm {
		perm[i] = i
	}
	params := p.params()
	grad := make([]float64, len(params))
	var c trunkCache
	start := time.Now()
	res := fitResult{valLoss: math.Inf(1)}
	best := p.snapshot()
	bad := 0
	for epoch := 1; epoch <= s.Epochs; epoch++ {
		rng.Shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		lr := s.LearningRate * (0.5 + 0.5*math.Cos(math.Pi*float64(epoch-1)/float64(s.Epochs)))
		var sum float64
		batches := 0
		for b := 0; b+s.BatchSize <= train.rows; b += s.BatchSize {
			clear(grad)
			var bl float64
			for _, r := range perm[b : b+s.BatchSize] {
				bl += lossFn(p, train, r, s, &c, grad)
			}
			norm := 1 / float64(s.BatchSize*s.Slots)
			for i := range grad {
				grad[i] *= norm
			}
			if s.L2 > 0 {
				for i, q := range params[:len(params)-1] {
					grad[i] += s.L2 * *q
				}
			}
			p.step(params, grad, lr)
			p.tr.clamp()
			sum += bl * norm
			batches++
		}
		if batches == 0 {
			return res, fmt.Errorf("train %s: %d examples, fewer than a batch of %d", name, train.rows, s.BatchSize)
		}
		last := sum / float64(batches)
		if math.IsNaN(last) || math.IsInf(last, 0) {
			return res, fmt.Errorf("train %s: loss diverged at epoch %d", name, epoch)
		}
		res.epochs = epoch
		vl := last
		if val.rows > 0 {
			vl = meanLoss(p, val, s, lossFn)
			if math.IsNaN(vl) || math.IsInf(vl, 0) {
				// Never an improvement: the untrained weights would be
				// kept, and exported as trained.
				return res, fmt.Errorf("train %s: the validation loss is %v at epoch %d", name, vl, epoch)
			}
		}
		if vl < res.valLoss {
			res.valLoss, res.bestEpoch, best, bad = vl, epoch, p.snapshot(), 0
		} else {
			bad++
		}
		if progress != nil {
			el := time.Since(start)
			progress(Progress{Model: name, Epoch: epoch, Epochs: s.Epochs, Loss: last, ValLoss: vl, Elapsed: el,
				Remaining: time.Duration(float64(el) / float64(epoch) * float64(s.Epochs-epoch))})
		}
		if bad >= s.Patience {
			break
		}
	}
	p.restore(best)
	// The kept weights' loss over the whole training set, without the L2
	// term: the running loss above is a mean over an epoch whose weights
	// moved, and perhaps a later epoch than the one kept.
	res.trainLoss = meanLoss(p, train, s, lossFn)
	return res, nil
}

// QuantileAlpha is the outputs' slope of a processor trained on the
// quantile loss (Settings.Quantile): its cost is a quantile in units of
// the host, so an output threshold of log-odds l cuts at a cost of
// 1 - l/QuantileAlpha (the output-threshold sweep's log-odds of -4 to 10
// reach from 1.4 to 0 of the host).
const QuantileAlpha = 10

// QuantileBandLow and QuantileBandHigh are the default range of usage, as
// shares of the host, whose slots the quantile loss reads
// (Settings.QuantileBand): the counts a threshold can choose lie where the
// cost is near the host's capacity, and a slot far below or above it (one
// replica of a light workload, a hundred of a heavy one) would weigh in the
// fit without ever being the count. (The validation loss is a mean over
// every slot, those outside the band scoring 0.)
const QuantileBandLow, QuantileBandHigh float64 = 0.25, 4

// pinball is one slot's quantile loss at quantile tau of log cost against
// log used, and its derivative with respect to cost; 0, 0 for a slot
// whose used lies outside band.
func pinball(tau, cost, used float64, band [2]float64) (loss, dCost float64) {
	if !(used >= band[0] && used <= band[1]) {
		return 0, 0
	}
	// A cost of 0 (both heads closed) would make the log infinite: the
	// floor keeps the loss finite and its gradient pushing the cost up.
	cost = max(cost, 1e-6)
	e := math.Log(used) - math.Log(cost)
	if e >= 0 {
		return tau * e, -tau / cost
	}
	return (tau - 1) * e, (1 - tau) / cost
}

// capacityQuantileLoss: the cost m a + sqrt(m) b of m = k+1 replicas as
// the s.Quantile quantile of their peak over the horizon.
func capacityQuantileLoss(p *processor, d *dataset, r int, s Settings, c *trunkCache, grad []float64) float64 {
	c.u = d.useRow(r)
	a, b := p.tr.eval(c.u, c)
	band := s.quantileBand()
	var loss, da, db float64
	for k := 0; k < s.Slots; k++ {
		m := float64(k + 1)
		sm := math.Sqrt(m)
		l, g := pinball(s.capacityQuantile(), m*a+sm*b, d.peak(r, k+1), band)
		loss += l
		da += g * m
		db += g * sm
	}
	if grad != nil {
		p.tr.backward(c, da, db, grad)
	}
	return loss
}

// admissionQuantileLoss: the queue's cost C_k (see admissionLoss) as the
// s.Quantile quantile of what the queue up to slot k takes
// (dataset.admissionUsed).
func admissionQuantileLoss(p *processor, d *dataset, r int, s Settings, c *trunkCache, grad []float64) float64 {
	c.u = d.useRow(r)
	a, b := p.tr.eval(c.u, c)
	n := d.running[r]
	band := s.quantileBand()
	var loss, da, db float64
	var q queueCost
	for k := 0; k < s.Slots; k++ {
		cost, dCostA, dCostB := q.add(k, n, a, b, d.demand[r])
		l, g := pinball(s.Quantile, cost, d.admissionUsed(r, k), band)
		loss += l
		da += g * dCostA
		db += g * dCostB
	}
	if grad != nil {
		p.tr.backward(c, da, db, grad)
	}
	return loss
}
