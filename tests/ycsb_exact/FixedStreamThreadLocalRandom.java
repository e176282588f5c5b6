package ycsbexact;

/**
 * Stands in for java.util.concurrent.ThreadLocalRandom in YCSB's classes, which Main loads with
 * that class name rewritten to this one (same length, so the class files stay valid). It hands
 * out a SplitMix64 stream that the Rust side reproduces: nextLong() is the next 64-bit value,
 * nextDouble() is ThreadLocalRandom's formula (the top 53 bits times 2^-53) over it.
 */
public final class FixedStreamThreadLocalRandom extends java.util.Random {
  private static final long serialVersionUID = 1L;
  private static final FixedStreamThreadLocalRandom INSTANCE = new FixedStreamThreadLocalRandom();
  private static long state;

  public static FixedStreamThreadLocalRandom current() {
    return INSTANCE;
  }

  /** Starts the stream again from seed. */
  public static void reset(long seed) {
    state = seed;
  }

  private static long next64() {
    state += 0x9E3779B97F4A7C15L;
    long z = state;
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  @Override
  public long nextLong() {
    return next64();
  }

  @Override
  public double nextDouble() {
    return (next64() >>> 11) * 0x1.0p-53;
  }

  @Override
  protected int next(int bits) {
    throw new UnsupportedOperationException("YCSB drew randomness in a way the comparison does not feed");
  }
}
