package ycsbexact;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;

/**
 * Loads YCSB's classes (and Draws) through a class loader that renames
 * java/util/concurrent/ThreadLocalRandom to ycsbexact/FixedStreamThreadLocalRandom in their
 * class files, so that YCSB's own generator code draws from a stream the test controls; then
 * runs Draws.
 */
public final class Main {
  private Main() {
  }

  static final byte[] FROM = "java/util/concurrent/ThreadLocalRandom".getBytes(StandardCharsets.UTF_8);
  static final byte[] TO = "ycsbexact/FixedStreamThreadLocalRandom".getBytes(StandardCharsets.UTF_8);

  static final class Rewriting extends ClassLoader {
    Rewriting(ClassLoader parent) {
      super(parent);
    }

    @Override
    protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
      if (!(name.startsWith("site.ycsb.") || name.equals("ycsbexact.Draws"))) {
        return super.loadClass(name, resolve);
      }
      synchronized (getClassLoadingLock(name)) {
        Class<?> c = findLoadedClass(name);
        if (c == null) {
          byte[] b = read(name);
          rewrite(b);
          c = defineClass(name, b, 0, b.length);
        }
        if (resolve) {
          resolveClass(c);
        }
        return c;
      }
    }

    private byte[] read(String name) throws ClassNotFoundException {
      String path = name.replace('.', '/') + ".class";
      try (InputStream in = getParent().getResourceAsStream(path)) {
        if (in == null) {
          throw new ClassNotFoundException(name);
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        in.transferTo(out);
        return out.toByteArray();
      } catch (IOException e) {
        throw new ClassNotFoundException(name, e);
      }
    }
  }

  static int rewrite(byte[] b) {
    int n = 0;
    outer:
    for (int i = 0; i + FROM.length <= b.length; i++) {
      for (int j = 0; j < FROM.length; j++) {
        if (b[i + j] != FROM[j]) {
          continue outer;
        }
      }
      System.arraycopy(TO, 0, b, i, TO.length);
      n++;
    }
    return n;
  }

  public static void main(String[] args) throws Exception {
    if (FROM.length != TO.length) {
      throw new AssertionError("names differ in length");
    }
    Class<?> draws = Class.forName("ycsbexact.Draws", true, new Rewriting(Main.class.getClassLoader()));
    Method m = draws.getMethod("main", String[].class);
    m.invoke(null, (Object) args);
  }
}
