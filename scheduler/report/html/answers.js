(function(){
const a=JSON.parse(document.getElementById('card').textContent).answers;
const NS='http://www.w3.org/2000/svg';
function el(name,attrs,parent,txt){const e=document.createElementNS(NS,name);
 for(const k in attrs)e.setAttribute(k,attrs[k]);if(txt!==undefined)e.textContent=txt;
 if(parent)parent.appendChild(e);return e;}
function svg(id,w,h){const s=el('svg',{width:w,height:h,viewBox:'0 0 '+w+' '+h});
 document.getElementById(id).appendChild(s);return s;}
function legend(s,x,entries){entries.forEach(([name,fill])=>{el('rect',{x:x,y:4,width:10,
 height:10,fill:fill},s);el('text',{x:x+13,y:13},s,name);x+=name.length*6.3+26;});}
const pct=x=>x===null?'–':Math.round(100*x)+'%';
const label=r=>r.model+' / '+r.prompt;
const configs=a.rows.filter(r=>r.dimension==='config');
let drawn=0;
// Fairness and adoption: two bars per configuration, side by side, never stacked or summed.
if(configs.length){const gw=100,bw=34,left=44,top=48,ph=150,base=top+ph;
 const s=svg('answer-fairness',left+gw*configs.length+150,base+130);
 legend(s,left,[['fairness','#0969da'],['adoption','#bf8700'],['baseline','#fff1b3']]);
 [0,0.25,0.5,0.75,1].forEach(t=>{const y=base-ph*t;
  el('line',{x1:left-4,x2:left+gw*configs.length,y1:y,y2:y,stroke:'#ddd'},s);
  el('text',{x:4,y:y+4},s,Math.round(100*t)+'%');});
 configs.forEach((r,i)=>{const x=left+i*gw+10,f=r.fairness||0,ad=r.baseline?0:(r.adoption||0);
  if(r.baseline){el('rect',{x:x-6,y:top-4,width:2*bw+14,height:ph+4,fill:'#fff1b3',
   class:'baseline'},s);el('text',{x:x-4,y:top-8},s,'baseline');}
  const fb=el('rect',{x:x,y:base-ph*f,width:bw,height:ph*f,fill:'#0969da'},s);
  el('title',{},fb,label(r)+': fairness '+pct(r.fairness));
  let peak=f;
  if(r.fairness_low!==null&&r.fairness_high!==null){peak=Math.max(f,r.fairness_high);
   el('line',{x1:x+bw/2,x2:x+bw/2,y1:base-ph*r.fairness_high,y2:base-ph*r.fairness_low,
    stroke:'#1b1f24'},s);}
  el('text',{x:x+2,y:base-ph*peak-4},s,pct(r.fairness));
  const ax=x+bw+2,ab=el('rect',{x:ax,y:base-ph*ad,width:bw,height:ph*ad,fill:'#bf8700'},s);
  el('title',{},ab,label(r)+': adoption '+(r.baseline?'0 (structural)':pct(r.adoption)));
  if(r.baseline)el('text',{x:ax+bw/2+4,y:base-4,transform:'rotate(-90 '+(ax+bw/2+4)+' '+
   (base-4)+')'},s,'0 (structural)');
  else el('text',{x:ax+2,y:base-ph*ad-4},s,pct(r.adoption));
  el('text',{x:x,y:base+14,transform:'rotate(30 '+x+' '+(base+14)+')'},s,label(r));});
 drawn++;}
// Citation grounding: grounded / unresolved / hallucinated shares per configuration.
const buckets=[['grounded','#1a7f37'],['unresolved','#8c959f'],['hallucinated','#cf222e']];
if(configs.length){const s=svg('answer-grounding',980,28+28*configs.length+8);
 legend(s,200,buckets);
 configs.forEach((r,j)=>{const y=24+28*j,total=r.grounded+r.unresolved+r.hallucinated;
  el('text',{x:4,y:y+15},s,label(r));
  if(!total){el('text',{x:200,y:y+15,fill:'#666'},s,'no citations');return;}
  let x=200;buckets.forEach(([b,fill])=>{const w=660*r[b]/total;if(!w)return;
   const bar=el('rect',{x:x,y:y,width:w,height:20,fill:fill},s);
   el('title',{},bar,b+': '+r[b]+' of '+total);
   if(w>28)el('text',{x:x+4,y:y+14,fill:'#fff'},s,String(r[b]));x+=w;});
  el('text',{x:866,y:y+15},s,pct(r.grounding_rate)+' grounded');});
 drawn++;}
// The judge's σ at criterion, step and scenario level against its noise floor.
const levels=['criterion','step','scenario'];
if(a.judges.length){const gw=300,bw=52,left=50,top=24,ph=150,base=top+ph;
 const values=a.judges.flatMap(j=>levels.map(l=>j['sigma_'+l]).concat([j.noise_floor]));
 const max=1.25*Math.max(0.01,...values.filter(v=>v!==null));
 const s=svg('answer-judge',left+gw*a.judges.length+10,base+44);
 [0,0.5,1].forEach(t=>{const y=base-ph*t;
  el('line',{x1:left-4,x2:left+gw*a.judges.length,y1:y,y2:y,stroke:'#ddd'},s);
  el('text',{x:4,y:y+4},s,(max*t).toFixed(3));});
 a.judges.forEach((j,i)=>{const x0=left+i*gw+10;
  levels.forEach((l,k)=>{const v=j['sigma_'+l],x=x0+k*(bw+8);
   el('text',{x:x,y:base+14},s,l);
   if(v===null){el('text',{x:x+14,y:base-4},s,'–');return;}
   const h=ph*v/max,bar=el('rect',{x:x,y:base-h,width:bw,height:h,fill:'#8250df'},s);
   el('title',{},bar,'σ '+l+' = '+v.toFixed(3));
   el('text',{x:x,y:base-h-4},s,v.toFixed(3));});
  const y=base-ph*j.noise_floor/max,end=x0+3*(bw+8);
  el('line',{x1:x0-6,x2:end,y1:y,y2:y,stroke:'#cf222e','stroke-width':2,
   'stroke-dasharray':'5 3',class:'noise-floor'},s);
  el('text',{x:end+4,y:y+4,fill:'#cf222e'},s,'noise floor '+j.noise_floor.toFixed(2));
  el('text',{x:x0,y:base+32},s,j.judge+' / '+j.rubric_id);});
 drawn++;}
document.body.dataset.charts=String(Number(document.body.dataset.charts)+drawn);
})();
