import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.lucene.analysis.core.WhitespaceAnalyzer;
import org.apache.lucene.document.Document;
import org.apache.lucene.document.Field;
import org.apache.lucene.document.TextField;
import org.apache.lucene.index.DirectoryReader;
import org.apache.lucene.index.IndexReader;
import org.apache.lucene.index.IndexWriter;
import org.apache.lucene.index.IndexWriterConfig;
import org.apache.lucene.index.Term;
import org.apache.lucene.search.BooleanClause;
import org.apache.lucene.search.BooleanQuery;
import org.apache.lucene.search.BoostQuery;
import org.apache.lucene.search.DisjunctionMaxQuery;
import org.apache.lucene.search.IndexSearcher;
import org.apache.lucene.search.Query;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TermQuery;
import org.apache.lucene.search.similarities.BM25Similarity;
import org.apache.lucene.store.ByteBuffersDirectory;
import org.apache.lucene.util.SmallFloat;

/**
 * Real Lucene's BM25 for tests/test_bm25_lucene.py.
 *
 * <p>{@code norms MAX [N...]}: for every length 0..MAX and each N, prints
 * {@code length \t intToByte4(length) (unsigned) \t byte4ToInt(that byte)}.
 *
 * <p>{@code score K1:B [K1:B...]}: reads lines {@code D\tid\ttitle\ttext} and {@code Q\tqid\ttext} (whitespace
 * tokens) from stdin, indexes fields title and text (when not empty) and contents = title + " " + text with
 * the WhitespaceAnalyzer, and for every K1:B and query prints {@code k1:b \t mode \t qid \t docid \t score} of
 * every matching document. A query on a field is Anserini's bag of words: one SHOULD TermQuery per distinct
 * token, boosted by its count. Modes: flat (contents), sum (a SHOULD clause per field: Anserini's multifield)
 * and best_fields (DisjunctionMaxQuery, tie-breaker 0.5: Elasticsearch's multi_match best_fields).
 */
public class LuceneBM25 {
    public static void main(String[] args) throws Exception {
        PrintStream out = new PrintStream(new BufferedOutputStream(System.out), false, "UTF-8");
        if (args[0].equals("norms")) {
            List<Integer> lengths = new ArrayList<>();
            for (int i = 0; i <= Integer.parseInt(args[1]); i++) lengths.add(i);
            for (int i = 2; i < args.length; i++) lengths.add(Integer.parseInt(args[i]));
            for (int n : lengths) {
                byte norm = SmallFloat.intToByte4(n);
                out.println(n + "\t" + Byte.toUnsignedInt(norm) + "\t" + SmallFloat.byte4ToInt(norm));
            }
        } else {
            score(Arrays.copyOfRange(args, 1, args.length), out);
        }
        out.flush();
    }

    static void score(String[] configs, PrintStream out) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        ByteBuffersDirectory dir = new ByteBuffersDirectory();
        IndexWriter writer = new IndexWriter(dir, new IndexWriterConfig(new WhitespaceAnalyzer())
                .setSimilarity(new BM25Similarity()));
        List<String[]> queries = new ArrayList<>();
        List<String> ids = new ArrayList<>();  // Lucene's doc number -> id: documents are numbered as added
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.split("\t", -1);
            if (f[0].equals("Q")) {
                queries.add(f);
                continue;
            }
            Document doc = new Document();
            ids.add(f[1]);
            if (!f[2].isEmpty()) doc.add(new TextField("title", f[2], Field.Store.NO));
            if (!f[3].isEmpty()) doc.add(new TextField("text", f[3], Field.Store.NO));
            doc.add(new TextField("contents", f[2] + " " + f[3], Field.Store.NO));
            writer.addDocument(doc);
        }
        writer.close();
        IndexReader reader = DirectoryReader.open(dir);
        if (reader.leaves().size() != 1) throw new IllegalStateException("expected one segment");
        IndexSearcher searcher = new IndexSearcher(reader);
        for (String config : configs) {
            String[] kb = config.split(":");
            searcher.setSimilarity(new BM25Similarity(Float.parseFloat(kb[0]), Float.parseFloat(kb[1])));
            for (String[] q : queries) {
                Query title = bag("title", q[2]), text = bag("text", q[2]);
                Map<String, Query> modes = new LinkedHashMap<>();
                modes.put("flat", bag("contents", q[2]));
                modes.put("sum", new BooleanQuery.Builder().add(title, BooleanClause.Occur.SHOULD)
                        .add(text, BooleanClause.Occur.SHOULD).build());
                modes.put("best_fields", new DisjunctionMaxQuery(Arrays.asList(title, text), 0.5f));
                for (Map.Entry<String, Query> mode : modes.entrySet()) {
                    for (ScoreDoc hit : searcher.search(mode.getValue(), reader.maxDoc()).scoreDocs) {
                        out.println(config + "\t" + mode.getKey() + "\t" + q[1] + "\t"
                                + ids.get(hit.doc) + "\t" + hit.score);
                    }
                }
            }
        }
        reader.close();
    }

    static Query bag(String field, String text) {
        Map<String, Integer> counts = new LinkedHashMap<>();
        for (String token : text.trim().split(" +")) counts.merge(token, 1, Integer::sum);
        BooleanQuery.Builder builder = new BooleanQuery.Builder();
        for (Map.Entry<String, Integer> e : counts.entrySet()) {
            Query term = new TermQuery(new Term(field, e.getKey()));
            builder.add(e.getValue() == 1 ? term : new BoostQuery(term, e.getValue()), BooleanClause.Occur.SHOULD);
        }
        return builder.build();
    }
}
