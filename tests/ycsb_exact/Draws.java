package ycsbexact;

import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.Properties;

import site.ycsb.generator.AcknowledgedCounterGenerator;
import site.ycsb.generator.DiscreteGenerator;
import site.ycsb.generator.ExponentialGenerator;
import site.ycsb.generator.HotspotIntegerGenerator;
import site.ycsb.generator.NumberGenerator;
import site.ycsb.generator.ScrambledZipfianGenerator;
import site.ycsb.generator.SkewedLatestGenerator;
import site.ycsb.generator.UniformLongGenerator;
import site.ycsb.generator.ZipfianGenerator;
import site.ycsb.measurements.Measurements;
import site.ycsb.workloads.CoreWorkload;

/**
 * Draws from YCSB 0.17.0's own generators and CoreWorkload key choice, fed the SplitMix64 stream
 * of FixedStreamThreadLocalRandom (restarted from the seed after each generator is built, since
 * YCSB's constructors draw once). Prints one line per scenario: its name, then the draws.
 * Arguments: draws per scenario, seed.
 */
public final class Draws {
  private Draws() {
  }

  static int n;
  static long seed;
  static StringBuilder line;

  static void start(String name) {
    line = new StringBuilder(name).append(':');
    FixedStreamThreadLocalRandom.reset(seed);
  }

  static void put(long v) {
    line.append(' ').append(v);
  }

  static void end() {
    System.out.println(line);
  }

  static void numbers(String name, NumberGenerator g) {
    start(name);
    for (int i = 0; i < n; i++) {
      put(g.nextValue().longValue());
    }
    end();
  }

  static double field(Object o, String name) throws Exception {
    Field f = o.getClass().getDeclaredField(name);
    f.setAccessible(true);
    return f.getDouble(o);
  }

  public static void main(String[] args) throws Exception {
    n = Integer.parseInt(args[0]);
    seed = Long.parseLong(args[1]);

    numbers("zipfian 0 999", new ZipfianGenerator(0, 999));
    numbers("zipfian 1 100", new ZipfianGenerator(1, 100));
    numbers("zipfian 0 99999", new ZipfianGenerator(0, 99999));

    // The item count grows as workload D's latest grows it: nextLong(itemcount).
    ZipfianGenerator grow = new ZipfianGenerator(0, 999);
    Method nextLong = ZipfianGenerator.class.getDeclaredMethod("nextLong", long.class);
    nextLong.setAccessible(true);
    start("zipfian 0 999 growing by 3");
    for (int i = 0; i < n; i++) {
      put((Long) nextLong.invoke(grow, 1000L + 3L * i));
    }
    end();
    start("zipfian 0 999 growing by 3 state");
    put(Double.doubleToRawLongBits(field(grow, "zetan")));
    put(Double.doubleToRawLongBits(field(grow, "eta")));
    end();

    numbers("scrambled 0 1000", new ScrambledZipfianGenerator(0, 1000));
    numbers("scrambled 0 1200000", new ScrambledZipfianGenerator(0, 1200000));

    // Workload D: every third step inserts (and acknowledges) a key, then a draw.
    AcknowledgedCounterGenerator acked = new AcknowledgedCounterGenerator(1000);
    SkewedLatestGenerator latest = new SkewedLatestGenerator(acked);
    start("latest 1000 inserting every 3");
    for (int i = 0; i < n; i++) {
      if (i % 3 == 0) {
        acked.acknowledge(acked.nextValue());
      }
      put(latest.nextValue());
    }
    end();

    numbers("hotspot 100 1099 0.2 0.8", new HotspotIntegerGenerator(100, 1099, 0.2, 0.8));
    numbers("uniform 5000 5999", new UniformLongGenerator(5000, 5999));
    numbers("uniform 0 9", new UniformLongGenerator(0, 9));

    ExponentialGenerator exp = new ExponentialGenerator(95, 1000 * 0.8571428571);
    start("exponential 95 857.1428571 bits");
    for (int i = 0; i < n; i++) {
      put(Double.doubleToRawLongBits(exp.nextValue()));
    }
    end();

    DiscreteGenerator ops = new DiscreteGenerator();
    ops.addValue(0.5, "0");
    ops.addValue(0.3, "1");
    ops.addValue(0.15, "2");
    ops.addValue(0.05, "3");
    start("discrete 0.5 0.3 0.15 0.05");
    for (int i = 0; i < n; i++) {
      put(Long.parseLong(ops.nextValue()));
    }
    end();

    // CoreWorkload's key choice (nextKeynum) for each request distribution.
    Measurements.setProperties(new Properties());
    Method nextKeynum = CoreWorkload.class.getDeclaredMethod("nextKeynum");
    nextKeynum.setAccessible(true);
    Field sequence = CoreWorkload.class.getDeclaredField("transactioninsertkeysequence");
    sequence.setAccessible(true);
    for (String dist : new String[] {"uniform", "zipfian", "latest", "hotspot", "exponential"}) {
      Properties p = new Properties();
      p.setProperty("recordcount", "1000");
      p.setProperty("operationcount", "3000");
      p.setProperty("insertproportion", "0.1");
      p.setProperty("requestdistribution", dist);
      CoreWorkload w = new CoreWorkload();
      w.init(p);
      AcknowledgedCounterGenerator inserts = (AcknowledgedCounterGenerator) sequence.get(w);
      start("keynum " + dist + " recordcount 1000 inserting every 4");
      for (int i = 0; i < n; i++) {
        if (i % 4 == 0) {
          inserts.acknowledge(inserts.nextValue());
        }
        put((Long) nextKeynum.invoke(w));
      }
      end();
    }
  }
}
