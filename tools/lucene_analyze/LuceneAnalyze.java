/*
 * Reference analyzer for beirx's language-pack tests: prints, for every line read on stdin
 * (UTF-8, '\n'-separated), the tokens a real Lucene analysis chain produces, space-separated,
 * one output line per input line. Terms are printed as Lucene indexes them (UTF-8 of the term's chars,
 * an unpaired surrogate becoming U+FFFD). Compiled at test time against the Debian liblucene8-java jars
 * (lucene-core, lucene-analyzers-common, lucene-analyzers-stempel 8.x) -- the analysis code that
 * Elasticsearch runs for its `polish` (analysis-stempel plugin) and `english` analyzers.
 *
 * Usage:
 *   java -cp JARS:DIR LuceneAnalyze polish            # org.apache.lucene.analysis.pl.PolishAnalyzer
 *   java -cp JARS:DIR LuceneAnalyze english           # org.apache.lucene.analysis.en.EnglishAnalyzer
 *   java -cp JARS:DIR LuceneAnalyze chain STEP...     # StandardTokenizer followed by the listed filters:
 *        possessive | elision=a,b,c | lowercase | stop=FILE (one word a line) | snowball=Spanish | porter | stempel
 *   java -cp JARS:DIR LuceneAnalyze SPEC + SPEC ...   # several analyzers over the same input: all output
 *                                                     # lines of the first, then of the second, ...
 *   java -cp JARS:DIR LuceneAnalyze stopset NAME...   # "NAME<TAB>word" lines: the default stop sets
 */

import java.io.BufferedReader;
import java.io.BufferedWriter;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.TreeSet;

import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.CharArraySet;
import org.apache.lucene.analysis.LowerCaseFilter;
import org.apache.lucene.analysis.StopFilter;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.Tokenizer;
import org.apache.lucene.analysis.en.EnglishAnalyzer;
import org.apache.lucene.analysis.en.EnglishPossessiveFilter;
import org.apache.lucene.analysis.en.PorterStemFilter;
import org.apache.lucene.analysis.pl.PolishAnalyzer;
import org.apache.lucene.analysis.snowball.SnowballFilter;
import org.apache.lucene.analysis.standard.StandardTokenizer;
import org.apache.lucene.analysis.stempel.StempelFilter;
import org.apache.lucene.analysis.stempel.StempelStemmer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.analysis.util.ElisionFilter;
import org.apache.lucene.util.BytesRef;

public final class LuceneAnalyze {

  /** StandardTokenizer followed by the filters named on the command line, in order. */
  static Analyzer chain(final List<String> steps) {
    return new Analyzer() {
      @Override
      protected TokenStreamComponents createComponents(String field) {
        Tokenizer source = new StandardTokenizer();
        TokenStream ts = source;
        for (String step : steps) {
          String[] kv = step.split("=", 2);
          switch (kv[0]) {
            case "possessive": ts = new EnglishPossessiveFilter(ts); break;
            case "lowercase": ts = new LowerCaseFilter(ts); break;
            case "elision": ts = new ElisionFilter(ts, new CharArraySet(Arrays.asList(kv[1].split(",")), true)); break;
            case "stop": ts = new StopFilter(ts, readWords(kv[1])); break;
            case "snowball": ts = new SnowballFilter(ts, kv[1]); break;
            case "porter": ts = new PorterStemFilter(ts); break;
            case "stempel": ts = new StempelFilter(ts, new StempelStemmer(PolishAnalyzer.getDefaultTable())); break;
            default: throw new IllegalArgumentException("unknown step: " + step);
          }
        }
        return new TokenStreamComponents(source, ts);
      }
    };
  }

  static CharArraySet readWords(String path) {
    try {
      List<String> words = new ArrayList<>();
      for (String w : Files.readAllLines(Paths.get(path), StandardCharsets.UTF_8)) {
        if (!w.isEmpty()) words.add(w);
      }
      return new CharArraySet(words, false);
    } catch (IOException e) {
      throw new RuntimeException(e);
    }
  }

  static CharArraySet stopSet(String name) {
    switch (name) {
      case "polish": return PolishAnalyzer.getDefaultStopSet();
      case "english": return EnglishAnalyzer.ENGLISH_STOP_WORDS_SET;
      case "spanish": return org.apache.lucene.analysis.es.SpanishAnalyzer.getDefaultStopSet();
      case "catalan": return org.apache.lucene.analysis.ca.CatalanAnalyzer.getDefaultStopSet();
      case "galician": return org.apache.lucene.analysis.gl.GalicianAnalyzer.getDefaultStopSet();
      case "german": return org.apache.lucene.analysis.de.GermanAnalyzer.getDefaultStopSet();
      case "french": return org.apache.lucene.analysis.fr.FrenchAnalyzer.getDefaultStopSet();
      case "italian": return org.apache.lucene.analysis.it.ItalianAnalyzer.getDefaultStopSet();
      case "portuguese": return org.apache.lucene.analysis.pt.PortugueseAnalyzer.getDefaultStopSet();
      case "dutch": return org.apache.lucene.analysis.nl.DutchAnalyzer.getDefaultStopSet();
      case "russian": return org.apache.lucene.analysis.ru.RussianAnalyzer.getDefaultStopSet();
      default: throw new IllegalArgumentException("unknown analyzer: " + name);
    }
  }

  static Analyzer analyzer(List<String> spec) {
    switch (spec.get(0)) {
      case "polish": return new PolishAnalyzer();
      case "english": return new EnglishAnalyzer();
      case "chain": return chain(spec.subList(1, spec.size()));
      default: throw new IllegalArgumentException("unknown analyzer: " + spec.get(0));
    }
  }

  public static void main(String[] args) throws IOException {
    BufferedWriter out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
    if (args[0].equals("stopset")) {
      for (String name : Arrays.asList(args).subList(1, args.length)) {
        TreeSet<String> words = new TreeSet<>();
        for (Object w : stopSet(name)) words.add(new String((char[]) w));
        for (String w : words) { out.write(name); out.write('\t'); out.write(w); out.write('\n'); }
      }
      out.flush();
      return;
    }
    List<Analyzer> analyzers = new ArrayList<>();
    List<String> spec = new ArrayList<>();
    for (String arg : args) {
      if (arg.equals("+")) { analyzers.add(analyzer(spec)); spec = new ArrayList<>(); }
      else spec.add(arg);
    }
    analyzers.add(analyzer(spec));
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
    List<String> lines = new ArrayList<>();
    String line;
    while ((line = in.readLine()) != null) lines.add(line);
    for (Analyzer analyzer : analyzers) {
      for (String text : lines) {
        try (TokenStream ts = analyzer.tokenStream("text", text)) {
          CharTermAttribute term = ts.addAttribute(CharTermAttribute.class);
          ts.reset();
          boolean first = true;
          while (ts.incrementToken()) {
            if (!first) out.write(' ');
            out.write(new BytesRef(term).utf8ToString());
            first = false;
          }
          ts.end();
        }
        out.write('\n');
      }
    }
    out.flush();
  }
}
